"""Two people named João Souza, in documents of their own: an accountant at Acme (two documents that
share Acme) and a nurse at Beta Clinic."""

from __future__ import annotations

JOAO = "person:joao souza"

ACME_STAFF = {
    "doc_id": "acme-staff",
    "text": "João Souza is an accountant at Acme. He works with Carlos Pereira.",
    "entities": [
        {"name": "João Souza", "type": "Person", "description": "accountant at Acme"},
        {"name": "Acme", "type": "Organization"},
        {"name": "Carlos Pereira", "type": "Person"},
    ],
    "relations": [
        {"source": "João Souza", "target": "Acme", "type": "WORKS_AT", "quote": "João Souza is an accountant at Acme."},
        {"source": "Carlos Pereira", "target": "João Souza", "type": "WORKS_WITH"},
    ],
}
BETA_CLINIC = {
    "doc_id": "beta-clinic",
    "text": "João Souza is a nurse at Beta Clinic.",
    "entities": [
        {"name": "João Souza", "type": "Person", "description": "nurse at Beta Clinic"},
        {"name": "Beta Clinic", "type": "Organization"},
    ],
    "relations": [{"source": "João Souza", "target": "Beta Clinic", "type": "WORKS_AT"}],
}
ACME_PAYROLL = {
    "doc_id": "acme-payroll",
    "text": "João Souza approved the Acme payroll for March.",
    "entities": [{"name": "João Souza", "type": "Person"}, {"name": "Acme", "type": "Organization"}],
}
