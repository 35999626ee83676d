"""The pattern's terms in Spanish and Chinese, declared once: each English term with its one rendering, the forms
it takes and the words it is never rendered as. The catalogues and the translated guides are held to it (by the
tests' lint, tests/glossary_lint.py), and docs/LANG/glossary.md's table is written from it:
`python -m lab.i18n.glossary`.

A word ending in * is a stem: "trunc*" is trunca, truncado, truncar. A rendering is found anywhere in a sentence; a
banned word only as a whole word (or, with *, as the start of one), in any letter case.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Term:
    english: str
    said: str  # the one rendering
    forms: tuple[str, ...] = ()  # its other forms (plural, conjugation): they render the term too
    never: tuple[str, ...] = ()  # never written in this language, in any sentence
    not_for: tuple[str, ...] = ()  # another term's word, never written where the English names this one
    seed: str = "—"  # how the seed article writes it (— where it does not use the term)
    why: str = ""  # why the lab departs from the seed, or what the term means here
    named: str = ""  # the English forms that name it, where the plain forms also say something else (a regex)
    only: bool = False  # its rendering says this term only: never where the English does not name it

    def renderings(self) -> tuple[str, ...]:
        return (self.said, *self.forms)


T = Term
# English words that also say something else: "run" a noun (not "run the grader", "running"), "step" not "step
# down", "choice" the explorer's (not argparse's)
A_RUN = (r"\b(?:a|the|each|every|one|this|that|its|your|their|of|per|new|same|real|simulated|whole|short|shortest|"
         r"longer|failing|two)\s+runs?\b|\bruns\s+(?:of|that)\b")
AN_ELECTION = r"\belections?\b"
A_CUT = (r"\bcut\s+(?:\w+\s+)?off\b|\bcut (?:the|a|every|one) link|\bcuts? heals?\b|\bheal the cut\b|"
         r"\bclick to cut\b|\bcut links?\b")  # a link cut, not a log or a segment cut at an index
A_STEP = r"\bsteps?\b(?!\s+down)"
A_CHOICE = r"(?<!invalid )\bchoices?\b"  # (argparse's "invalid choice" is a bad value)

GLOSSARY: dict[str, tuple[Term, ...]] = {
    "es": (
        T("high-water mark", "marca de agua alta", ("marcas de agua alta", "HWM"), ("marca de agua alto", "nivel de agua"),
          seed="High Water Mark, la marca",
          why="La nota deja el término en inglés y luego dice \"la marca\". En las frases del laboratorio (\"la "
              "marca de agua alta de A pasa de 3 a 4\", \"por encima de su marca de agua alta\") \"la marca\" sola "
              "no se entiende fuera de contexto (una etiqueta, un mensaje de error), y el inglés en medio de cada "
              "frase se lee mal. La traducción literal se presenta con el inglés al lado la primera vez, y con su "
              "sigla HWM."),
        T("leader", "líder", ("líderes",), ("lider", "jefe", "maestro", "primario"), seed="líder"),
        T("follower", "seguidor", (), ("esclavo", "secundario"), seed="seguidor"),
        T("generation", "generación", ("generaciones",), ("época", "término"), seed="Generation Clock",
          why="La nota nombra el patrón (*Generation Clock*); cada valor que ese reloj cuenta es una generación, la "
              "palabra del artículo original para ese número."),
        T("epoch", "generación", ("generaciones",), ("época",),
          why="Kafka llama *leader epoch* al número que el laboratorio, como el artículo, llama generación: una sola "
              "palabra para las dos. La estrategia de truncado `leader-epoch` conserva su nombre."),
        T("write-ahead log", "WAL", (), ("registro de escritura anticipada",), seed="WAL"),
        T("entry", "entrada", ("entradas",), ("registro",), seed="entrada",
          why="La nota también dice \"línea de log\"; el laboratorio usa una sola palabra. Por eso \"entrada\" no "
              "nombra otra cosa: las entradas de una función de prueba son \"casos\"."),
        T("truncate", "trunc*", (), ("recortar",), seed="truncar, truncado"),
        T("commit", "confirm*", (), ("comprometid*", "cometid*"), seed="confirmada"),
        T("acknowledge", "acuse de recibo", ("acusa recibo", "acusó recibo"), ("aceptada",),
          why="El acuse de recibo es lo que el cliente recibe cuando su escritura ya está en una mayoría. No es "
              "\"confirmar\" (eso es commit: una escritura confirmada por el líder puede no tener aún acuse de "
              "recibo) ni \"aceptar\", que no dice a quién ni cuándo."),
        T("majority", "mayoría", (), (), seed="Quorum",
          why="La nota dice \"un Quorum de seguidores\". El laboratorio cuenta una mayoría estricta de todo el "
              "cluster (n // 2 + 1, también con n par) y la nombra así, porque el ejercicio 1 es contarla."),
        T("node", "nodo", ("nodos",), (), seed="nodo"),
        T("cluster", "cluster", (), ("clúster",), seed="cluster",
          why="Con minúscula también como nombre de la pestaña del tablero: \"la pestaña Cluster\" es la única "
              "mayúscula, la de una etiqueta."),
        T("heartbeat", "heartbeat", ("heartbeats",), ("latido",), seed="HeartBeat",
          why="La misma palabra, en minúsculas, como sustantivo común."),
        T("request", "solicitud", ("solicitudes",), ("pedido",), seed="request",
          why="La nota deja \"request\" en inglés (\"los request desde el Lider\"); en las frases del laboratorio "
              "lleva artículo y adjetivos (\"una solicitud tardía\"), y la palabra española se lee mejor."),
        T("match index", "índice de coincidencia", ("índices de coincidencia",), ("match index",),
          why="El código dice `match_index` y queda así; en la prosa, español (el chino también lo traduce)."),
        T("next index", "índice siguiente", (), ("next index",), why="Como *match index*."),
        T("pre-vote", "prevoto", (), ("pre-voto",), why="Sin guion, como \"precandidato\"."),
        T("torn tail", "cola incompleta", (), ("cola rota",)),
        T("trace", "traza", ("trazas",), ("rastro",)),
        T("replay", "reproduc*", ("reprodúc*",), ("repetición", "repeticiones"),
          why="Volver a pasar una ejecución grabada (su traza, o el guion de un contraejemplo) es reproducirla, "
              "como un vídeo: \"reproducir\", \"la reproducción\", \"reproduce un directorio de trazas\"."),
        T("delay", "retardo", ("retardos",), ("retraso*", "retrasa*", "retrasar", "retrasad*"),
          why="El tiempo que un mensaje espera antes de llegar, como en redes: un retardo (\"retardo de 800 ms por "
              "mensaje\"); el verbo es \"añadir un retardo\"."),
        T("link", "enlace", ("enlaces",), (), ("conexi*",),
          why="El camino de un nodo a otro, que se corta y se repara. La conexión es otra cosa: la de TCP entre "
              "dos procesos."),
        T("connection", "conexi*"),
        T("cut", "cort*", ("aisla*", "aísla*"), (), ("conexi*",), named=A_CUT, why="Se corta un enlace (o se aísla un nodo de los demás)."),
        T("heal", "repar*", (), ("sanar", "curar", "restablec*"), ("conexi*",), why="Un enlace cortado se repara."),
        T("resume", "reanud*", ("reanúd*",), ("despausa*",), ("repar*",),
          why="Un nodo pausado (SIGSTOP) se reanuda (SIGCONT); un enlace cortado se repara: dos palabras."),
        T("recover", "recupera*"),
        T("election", "elecci*", (), (), only=True, named=AN_ELECTION,
          why="Solo la de un líder (\"inicia una elección\", \"los temporizadores de elección\")."),
        T("choice", "opci*", (), (), ("elecci*",),
          why="En el explorador, cada cosa que puede pasar en un estado (entregar un mensaje, que un nodo caiga, "
              "un tic) es una opción, y una ejecución es una lista de opciones tomadas. \"Elección\" es solo la de "
              "un líder.", named=A_CHOICE),
        T("run", "ejecu*", (), ("corrida", "corridas"),
          why="Una ejecución del cluster o del simulador, de principio a fin; el verbo es \"ejecutar\".",
          named=A_RUN),
        T("scenario step", "paso", ("pasos",), ("etapa", "etapas"),
          why="Un paso de un escenario o de un contraejemplo (\"en el paso 3\").",
          named=A_STEP),
        T("tick", "tic", ("tics",), ("tick", "ticks"),
          why="La unidad del reloj lógico de cada nodo: los temporizadores de elección y los heartbeats se cuentan "
              "en tics, como el tictac de un reloj."),
        T("control API", "API de control", (), ("interfaz de control",),
          why="La API HTTP del supervisor; se deja la sigla API, femenina, como se dice en español."),
        T("dashboard", "tablero", (), ("panel",)),
        T("instructor", "profesor", (), ("instructor",), why="Quien da el curso; el estudiante lo llama así."),
        T("viewer", "espectador", ("espectadores",), ("quien mira",)),
        T("nemesis", "némesis", ("la némesis", "una némesis"), ("el némesis", "un némesis"),
          why="Femenino, como en el diccionario: \"la némesis\"."),
        T("grader", "calificador", ("calificadores",), ("corrector",),
          why="El programa del profesor que puntúa las entregas; \"corrector\" se confunde con quien corrige a "
              "mano."),
        T("append", "añad*", (), ("agreg*",),
          why="Un solo verbo para añadir entradas a un log: \"añadir\" (añade, añadidas)."),
        T("broken", "incumpl*", (), ("regla rota", "reglas rotas", "violaci*", "rompió", "rompe", "romper", "roto"),
          why="Una regla del laboratorio que no se cumple está \"incumplida\"; un informe la marca [INCUMPLIDA] y "
              "cuenta \"incumplimientos\": una sola palabra para lo mismo.", named=r"\bbroken\b"),
        T("violation", "incumplimiento", ("incumplimientos",), ("violación", "violaciones"), why="Como *broken*."),
        T("docstring", "docstring", (), ("cadena de documentación",),
          why="Término de Python que se deja en inglés, como lo escribe el código: una sola palabra en el catálogo "
              "y en la guía."),
        T("stale", "obsolet*", (), ("desactualizad*",),
          why="Una lectura obsoleta (*stale read*) es segura, nunca por encima de la marca de agua alta, pero no la "
              "más reciente: un nodo rechaza un índice después de que un cliente recibiera el acuse de recibo de "
              "una escritura allí. Un solo adjetivo para lo mismo."),
        T("linearizable", "linealizable", ("linealizables",), ("linearizable",),
          why="Un historial es linealizable cuando cada operación puede colocarse en un instante de su intervalo; "
              "el término de la literatura en español, no el inglés."),
        T("session", "sesión", ("sesiones",),
          why="Las operaciones de un mismo cliente, en su orden: en ellas se comprueban «lee tus escrituras» y las "
              "lecturas monótonas."),
    ),
    "zh": (
        T("high-water mark", "高水位标记", ("HWM",), ("高水位线", "高水印"), seed="高水位标记"),
        T("leader", "领导者", (), ("领袖", "主节点", "领导人"), seed="领导者"),
        T("follower", "追随者", (), ("跟随者", "从节点", "追踪者"), seed="追随者",
          why="“从节点”也是 slave node 的常见译法，所以“from node”译作“读取的节点”。"),
        T("generation", "世代", (), ("任期", "纪元", "代数", "时代"), seed="时代时钟（Generation Clock）",
          why="文章把这个模式叫作“时代时钟”；它计数的每一个值，本实验室称为一个世代。单独的“时代”读起来像历史时期，"
              "“任期”是 Raft 的 term。学生指南第一次用到“世代”时也说明这一点。"),
        T("epoch", "世代", (), ("纪元",),
          why="Kafka 的 leader epoch 就是本实验室的世代：同一个数，一个词。截断策略 `leader-epoch` 保留原名。"),
        T("write-ahead log", "预写日志", (), ("预写式日志", "提前写日志"), seed="预写日志"),
        T("entry", "条目", (), ("记录项", "日志项"), seed="条目"),
        T("index", "索引", (), ("下标",), seed="索引"),
        T("truncate", "截断", (), ("裁剪", "截短"), seed="截断"),
        T("committed", "提交", (), ("承诺",), seed="提交", named=r"\b(?:un)?commit(?:s|ted|ting)?\b", only=True),
        T("majority", "多数", (), (), seed="大多数",
          why="日常中文的“大多数”是 most；这里是整个集群的严格多数（n // 2 + 1，节点数为偶数时也一样），练习 1 就是"
              "计算它。"),
        T("cluster", "集群", (), ("群集",), seed="集群"),
        T("node", "节点", (), ("结点",), seed="节点", why="文章多说“服务器”；实验室中的每个进程是集群的一个节点。"),
        T("heartbeat", "心跳", seed="心跳"),
        T("client", "客户端", (), ("客户机",), seed="客户端"),
        T("request", "请求", seed="请求"),
        T("submit", "上交", why="“提交”已经表示 commit（已提交的条目），交作业用“上交”。"),
        T("trace", "跟踪记录", (), ("轨迹",)),
        T("replay", "回放", (), ("重放",),
          why="再看一遍录下的运行（跟踪记录或反例的脚本），像回放录像一样：“回放视图”“回放反例”。"),
        T("delay", "延迟", (), ("延时", "时延"), why="消息到达之前等待的时间（课堂上的慢动作）。"),
        T("link", "链路", (), (), ("连接",),
          why="从一个节点到另一个节点的通路，可以切断和修复；“连接”是两个进程之间的 TCP 连接。"),
        T("connection", "连接"),
        T("cut", "切断", ("隔离",), (), ("连接",), named=A_CUT, why="切断的是链路（或把一个节点与其他节点隔离开）。"),
        T("heal", "修复", (), (), ("恢复", "连接"),
          why="被切断的链路“修复”；“恢复”只用于重启后从磁盘恢复（recover），不用于 heal 和 resume。"),
        T("resume", "继续运行", (), (), ("恢复",), why="暂停的节点“继续运行”（SIGCONT），和修复链路是两回事。"),
        T("recover", "恢复"),
        T("election", "选举", only=True, named=AN_ELECTION, why="只指选出领导者（“发起选举”“选举计时器”）。"),
        T("choice", "选择", (), (), ("选举",),
          why="探索器里，一个状态下可能发生的每件事（投递一条消息、一个节点崩溃、一次时钟滴答）都是一个选择，一次运行"
              "就是一串做出的选择；“选举”只指选出领导者。",
          named=A_CHOICE),
        T("run", "运行", why="集群或模拟器从头到尾的一次运行。",
          named=A_RUN),
        T("scenario step", "步", why="场景或反例的一步（“第 3 步”）。", named=A_STEP),
        T("tick", "滴答", (), ("tick",), why="每个节点逻辑时钟的单位：选举计时器和心跳都以滴答计数。"),
        T("control API", "控制 API", (), ("控制接口",), why="监督进程的 HTTP API。"),
        T("instructor", "老师", (), ("讲师",)),
        T("viewer", "观看者"),
        T("match index", "匹配索引"),
        T("next index", "下一个索引"),
        T("pre-vote", "预投票"),
        T("handout", "初始代码", (), ("讲义",), why="讲义是课堂笔记；这里指练习的初始代码。"),
        T("nemesis", "故障注入器", (), ("捣乱者",)),
        T("grader", "评分器", (), ("评分程序",)),
        T("dashboard", "仪表盘", (), ("看板", "控制台")),
        T("failover", "切换", (), ("换届",), why="领导者被杀后选出新的领导者，是一次领导者切换。"),
        T("broken", "违反", ("违规", "未满足", "未通过"), ("不成立",),
          why="检查报告中一条规则没有满足，标记为“未通过”，和未通过的场景用同一个词。", named=r"\bbroken\b"),
        T("stale", "陈旧", (), ("过期读",),
          why="陈旧读（stale read）是安全的（从不高于高水位标记），但不是最新的：客户端已得到某个索引处写入的确认，"
              "之后某个节点仍拒绝这个索引。"),
        T("linearizable", "线性一致", (), ("可线性化",),
          why="etcd 和 TiDB 的中文文档把 linearizable read 译作“线性一致读”，本实验室沿用。"),
        T("session", "会话", why="同一个客户端按顺序发出的操作：读己之写和单调读都在会话中检查。"),
    ),
}

HEADINGS = {"es": ("inglés", "término", "también", "nunca", "artículo", "por qué"),
            "zh": ("英文", "术语", "也可", "不用", "文章", "原因")}
SAID_FOR = {"es": "{word} (es *{english}*)", "zh": "{word}（指 {english}）"}  # a word kept for another term


# ---- a rendering's term ---------------------------------------------------------------------------------------

def owner(lang: str, word: str) -> Term:
    """The term whose rendering a word is."""
    return next(t for t in GLOSSARY[lang] if word in t.renderings())



# ---- the guides' table ------------------------------------------------------------------------------------------

BEGIN = "<!-- glossary: written by `python -m lab.i18n.glossary` from lab/i18n/glossary.py; edit it there -->"
END = "<!-- end of glossary -->"


def table(lang: str) -> str:
    """The glossary of `lang` as the markdown table of docs/LANG/glossary.md (a stem's * escaped)."""
    def row(cells):
        return "|" + "|".join(f" {cell} " if cell else " " for cell in cells) + "|"

    def words(items):
        return ", ".join(items).replace("*", "\\*")

    rows = [row(HEADINGS[lang]), "|" + "---|" * len(HEADINGS[lang])]
    for t in GLOSSARY[lang]:
        kept = (SAID_FOR[lang].format(word=w.replace("*", "\\*"), english=owner(lang, w).english) for w in t.not_for)
        never = ", ".join(x for x in (words(t.never), *kept) if x)
        rows.append(row((t.english, words([t.said]), words(t.forms), never, t.seed, t.why)))
    return "\n".join(rows)


def guide_path(lang: str) -> Path:
    return ROOT / "docs" / lang / "glossary.md"


def written(lang: str, text: str) -> str:
    """docs/LANG/glossary.md with its table as the glossary says it."""
    head, rest = text.split(BEGIN, 1)
    return f"{head}{BEGIN}\n{table(lang)}\n{END}{rest.split(END, 1)[1]}"


if __name__ == "__main__":
    for lang in GLOSSARY:
        path = guide_path(lang)
        text = path.read_text(encoding="utf-8")
        new = written(lang, text)
        if new != text:
            aside = path.with_name(path.name + ".new")
            aside.write_text(new, encoding="utf-8")
            aside.replace(path)
        print(f"{path.relative_to(ROOT)}: {len(GLOSSARY[lang])} terms")
    sys.exit(0)
