"""What a native reader of Spanish and Chinese found left in English or stiff after the first pass: each sentence is
said from the catalogue, and says what happened (an exercise not written yet is not a timeout)."""

from __future__ import annotations

import pytest

from lab import i18n
from lab.core import impl as impl_module
from lab.harness.scenario import simulate

TRANSLATED = ("es", "zh")

STUB = '''
from solutions import *  # noqa: F403


def on_replication_response(*args, **kwargs):
    raise NotImplementedError("exercise 2")
'''


@pytest.mark.parametrize("lang, expected", [("es", "no hay ningún módulo llamado 'no_such_impl'"),
                                            ("zh", "没有名为 'no_such_impl' 的模块")])
def test_an_implementation_that_does_not_exist_is_said_in_the_readers_language(lang, expected):
    with pytest.raises(impl_module.ImplError) as caught:
        impl_module.load("no_such_impl")
    said = i18n.localize(caught.value.args[0], lang)
    assert expected in said and "cannot import" not in said


def test_a_write_stopped_by_an_exercise_not_written_says_so_not_timeout(tmp_path, monkeypatch):
    (tmp_path / "unwritten_impl.py").write_text(STUB, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    verdict = simulate("s1", impl="unwritten_impl:on_replication_response")
    assert "on_replication_response is not written yet" in verdict.aborted, verdict.aborted
    assert "timeout" not in verdict.aborted
    for lang in TRANSLATED:
        said = i18n.localize(verdict.aborted, lang)
        assert "not written" not in said and "on_replication_response" in said
