"""The audit: data + model -> every PD -> scores -> findings -> trust -> one :class:`Audit` record.

=====================  ==============================================================
module                 what
=====================  ==============================================================
pipeline               ``audit()``: the stages run in order on the inputs checked once
validation             the inputs checked once at the entry
summary                what was audited: the model, the data under the PDs, the metadata
notes                  the sentences the audit adds to its notes
record                 ``Audit``: the frozen record of the stages' results
=====================  ==============================================================

Above every stage; ``autopdp.audit`` and ``autopdp.Audit`` are the public names.
"""
