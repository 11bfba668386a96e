"""What the reports say a finding is and what their noise tests test (issue 29, "say what is tested").

The HTML report, the PDF's HTML and the Word document each define a finding with the audit's own
materiality, significance and adjustment, and say that the tests are conditional on the fitted model
(Monte-Carlo noise of averaging over the audit rows), what that does not establish, and that the
learner (refits) is not tested.  Non-default materiality and significance prove the numbers come from
the config.
"""

import html as html_lib
import io
import re

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from autopdp import AuditConfig
from autopdp import audit

docx = pytest.importorskip("docx")

DEFINITION = (
    "A PDP is a finding under a criterion only when its effect exceeds the materiality threshold "
    "(0.07 × the standard deviation of the model's predictions over the audit rows, on the criterion's scale, the "
    "tests carrying its sampling error; for the slope a change of "
    "twice that across its steepest interval, the least step that makes a feature an importance finding; for the "
    "correlation criterion an association of 0.4 on its 0-1 scale) with 90% confidence after the Benjamini-Hochberg adjustment "
    "across the PDPs of the criterion, conditional on the fitted model: a one-sided test rejects \"the effect is at "
    "most the materiality threshold\" at adjusted p ≤ 0.1."
)
TESTED = (
    "What was tested: the fitted model's partial dependences against the Monte-Carlo noise of averaging over the "
    "audit's 300 rows, conditional on the fitted model; whether a refit of the same learner would show the same "
    "patterns (learner variance) is not tested in this report."
)
#: the methodology chapter's own statements (HTML, PDF and Word render the same block)
METHODOLOGY = (
    "the model is held fixed, so the null is conditional on the fitted model and on the distribution of the audit rows.",
    "Not established by these tests. That the pattern is in the data-generating process, or would survive a refit:",
    "The next item says whether refits of the learner asked the second question.",
    "The learner. Not tested in this report. Refitting the same learner on resamples of the training data would test "
    "it (give the training data and refits: --train, --refits); this audit refits nothing.",
    "makes an effect exactly at the threshold a finding at most at the nominal level (0.1)",
    "The Benjamini-Hochberg adjustment bounds the expected share of false findings among a criterion's findings at "
    "0.1.",
)


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(3)
    X = pd.DataFrame({"a": rng.normal(size=300), "b": rng.uniform(0, 5, 300), "c": rng.normal(size=300)})
    y = (1.5 * X.a + 0.6 * X.b + rng.normal(size=300) > 1.5).astype(int)
    cfg = AuditConfig(grid_resolution=8, grid_resolution_2d=4, top_k=1, noise_draws=50, max_noise_draws=100,
                      materiality=0.07, significance=0.1, min_association=0.4)
    return audit(LogisticRegression().fit(X, y), X, y, config=cfg)


def _text(markup: str) -> str:
    """An HTML document's visible text, whitespace collapsed (scripts, styles and SVG dropped)."""
    markup = re.sub(r"<(script|style|svg)\b.*?</\1>", " ", markup, flags=re.S | re.I)
    return re.sub(r"\s+", " ", html_lib.unescape(re.sub(r"<[^>]+>", " ", markup)))


def _docx_text(data: bytes) -> str:
    d = docx.Document(io.BytesIO(data))
    parts = [p.text for p in d.paragraphs]
    for t in d.tables:
        for row in t.rows:
            parts.extend(c.text for c in row.cells)
    return re.sub(r"\s+", " ", "\n".join(parts))


def _check(text: str):
    assert DEFINITION in text
    assert TESTED in text  # the executive summary
    for sentence in METHODOLOGY:
        assert sentence in text
    assert "clear of sampling noise" not in text  # the phrase a validator read as a claim about the data


def test_html_report_says_what_a_finding_is_and_what_is_tested(small):
    _check(_text(small.to_html()))


def test_pdf_html_says_what_a_finding_is_and_what_is_tested(small):
    from autopdp.report.render import render_pdf_html
    from autopdp.report.writer import report_context

    _check(_text(render_pdf_html(report_context(small, formats=("pdf",)))))


def test_word_report_says_what_a_finding_is_and_what_is_tested(small):
    _check(_docx_text(small.to_docx()))


def test_definition_follows_the_config():
    from autopdp.report.methodology import confidence_text, finding_definition

    text = finding_definition(AuditConfig(materiality=0.2, significance=0.01, multiple_testing="holm"))
    assert "(0.2 × the standard deviation of the model's predictions over the audit rows, on the criterion's scale," in text
    assert "with 99% confidence after the Holm adjustment across the PDPs of the criterion, conditional on the " \
           "fitted model" in text
    assert "at adjusted p ≤ 0.01." in text
    assert [confidence_text(a) for a in (0.05, 0.1, 0.001, 0.025)] == ["95%", "90%", "99.9%", "97.5%"]
