"""The guides' samples of output are what the program prints now, in each guide's language
(lab/commands/guides.py): a sample that no longer matches fails here, and `python -m lab.commands.guides` writes
it again."""

from __future__ import annotations

import pytest

from lab.commands import guides


@pytest.mark.parametrize("lang", sorted(guides.GUIDES))
def test_each_guides_samples_are_the_programs_output(lang):
    path = guides.GUIDES[lang]
    assert len(guides.samples(path)) >= 2, "the guide marks its samples of output"
    assert guides.regenerated(path, lang) == path.read_text(encoding="utf-8"), \
        f"{path.name} ({lang}): a sample differs from the program's output; run python -m lab.commands.guides"


def test_a_stale_sample_is_found(tmp_path):
    guide = tmp_path / "guide.md"
    guide.write_text("Intro.\n\n<!-- output: simulate s1 | 1 -->\n```\ns1 (generation): FAIL\n...\n```\n\nEnd.\n",
                     encoding="utf-8")
    assert guides.samples(guide) == ["simulate s1"]
    fresh = guides.regenerated(guide, "es")
    assert fresh == "Intro.\n\n<!-- output: simulate s1 | 1 -->\n```\ns1 (generation): PASA\n...\n```\n\nEnd.\n"
