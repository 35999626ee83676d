"""The shell of every HTML page the grader writes (a student's feedback, the class's report.html): one file each,
its stylesheet inline, no script or font from elsewhere, so it opens from a folder with no network."""

from __future__ import annotations

import html

CSS = """body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
body.wide{max-width:76rem}
table{border-collapse:collapse;margin:1rem 0;max-width:100%}td,th{border:1px solid #ccc;padding:.3rem .6rem;
text-align:left;overflow-wrap:anywhere}th{background:#f3f3f3;white-space:nowrap;overflow-wrap:normal}
pre{background:#f7f7f7;padding:.6rem;font-size:.8rem;white-space:pre-wrap;overflow-wrap:anywhere}
.unsafe{background:#ffd7d7;padding:.5rem;font-weight:bold}.here{background:#ffe9a8}.bad{color:#a40000}.ok{color:#176b00}.rule{font-style:italic}
.play{background:#eef5fb;border-left:4px solid #0072B2;padding:.4rem .7rem}svg{max-width:100%;height:auto}
summary{cursor:pointer}svg text{font-family:system-ui,sans-serif;font-size:11px}
#students{width:100%;table-layout:fixed;font-size:.85rem}#students td,#students th{padding:.2rem .35rem}
#students th{cursor:pointer;user-select:none}#students th[aria-sort=ascending]::after{content:" \\25B2"}
#students th[aria-sort=descending]::after{content:" \\25BC"}#students td.n,#students th.n{text-align:right}
#students td.cut{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
#students tr.attention td:first-child{border-left:4px solid #c75000}.lost{color:#a40000}
.find{display:flex;gap:1rem;align-items:center;flex-wrap:wrap}.find input[type=search]{width:20rem}"""


def page(title: str, body: str, wide: bool = False, script: str = "") -> str:
    opening = '<body class="wide">' if wide else "<body>"
    closing = f"<script>{script}</script>" if script else ""
    return (f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{html.escape(title)}"
            f"</title><style>{CSS}</style></head>{opening}\n{body}\n{closing}</body></html>\n")
