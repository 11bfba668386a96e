"""Embedded demo data.

German Credit (Statlog German Credit Data), UCI Machine Learning Repository,
dataset id 144, DOI 10.24432/C5NC77, donated by Prof. Dr. Hans Hofmann
(Universitaet Hamburg, 1994), licensed CC BY 4.0.  See ``data/GERMAN_CREDIT.md``.
"""

from __future__ import annotations

from importlib import resources

import pandas as pd

__all__ = ["load_german_credit", "GERMAN_CREDIT_CITATION"]

GERMAN_CREDIT_CITATION = (
    "Hofmann, H. (1994). Statlog (German Credit Data). UCI Machine Learning Repository. "
    "https://doi.org/10.24432/C5NC77 (CC BY 4.0)"
)


def load_german_credit() -> tuple[pd.DataFrame, pd.Series]:
    """The German Credit data: 1,000 applicants, 20 features.

    Returns
    -------
    X : DataFrame of shape (1000, 20)
        The columns of the UCI CSV (7 integer, 13 categorical with the UCI
        symbolic codes such as ``A11``), in file order.
    y : Series of shape (1000,), named ``bad_credit``
        1 for a bad credit risk (UCI ``class`` 2), 0 for good (``class`` 1).
    """
    path = resources.files(__package__).joinpath("data", "german_credit.csv")
    with resources.as_file(path) as p:
        df = pd.read_csv(p)
    y = (df.pop("class") == 2).astype(int).rename("bad_credit")
    return df, y
