"""Identifiers as people write them: compared in the form of their kind (a code without case or
separators, the digits of a number, a URL's canonical form), the kind configurable per entity type;
two a slip apart are queued for a curator. Ingested by a writer with the CLI, the setting changed
by the tenant's writer, queued and approved by a curator in psql, built again by the writer."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from commands import psql, run


def person(doc_id: str, name: str, identifier: str, text: str = "") -> dict[str, object]:
    return {
        "doc_id": doc_id,
        "text": text or f"{name} signed the form.",
        "entities": [{"name": name, "type": "Person", "identifier": identifier}],
    }


def site(doc_id: str, url: str) -> dict[str, object]:
    return {
        "doc_id": doc_id,
        "text": "Contoso publishes its prices online.",
        "entities": [{"name": "Contoso site", "type": "Website", "identifier": url}],
    }


DOCS = [
    person("form-a", "Ana Lima", "CPF 123.456.789-00"),
    person("form-b", "A. Lima", "cpf 12345678900"),
    person("form-c", "Ana L.", "123.456.789-00"),  # the same digits, without the letters
    person("badge-1", "Bruno Dias", "EMP-0042"),
    person("badge-2", "Bruno D.", "EMP-0024"),  # two digits swapped: a slip, or another person
    person("badge-3", "Carla Reis", "EMP-0043"),  # the next number: no slip
    site("web-1", "https://www.Contoso.com:443/Prices/#eu"),
    site("web-2", "http://contoso.com/prices"),
]


def cli_ingest(dsn: str, tmp_path: Path, docs: list[dict[str, object]]) -> None:
    path = tmp_path / "people.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    done = run("ingest", str(path), "--embedder", "hash", "--tenant", "t1", dsn=dsn)
    assert done.returncode == 0, done.stdout + done.stderr


def tsql(dsn: str, *statements: str) -> subprocess.CompletedProcess[str]:
    """psql in one transaction for tenant t1; its output without use_tenant's line."""
    args = [arg for statement in ("SELECT kgrag.use_tenant('t1')", *statements) for arg in ("-c", statement)]
    done = psql(dsn, "-1", *args)
    done.stdout = "\n".join(done.stdout.splitlines()[1:])
    return done


def entities(dsn: str) -> dict[str, list[str]]:
    out = tsql(
        dsn,
        "SELECT s.entity_id, string_agg(s.doc_id, ',' ORDER BY s.doc_id) FROM kgrag.entity_source AS s"
        " WHERE s.entity_id LIKE '%:#%' GROUP BY 1 ORDER BY 1",
    )
    assert out.returncode == 0, out.stderr
    rows = [line.split("|") for line in out.stdout.splitlines() if line]
    return {entity: docs.split(",") for entity, docs in rows}


def queue(dsn: str, curator: str) -> list[str]:
    out = tsql(
        curator,
        "SELECT target FROM kgrag.review_queue WHERE item = 'near_identifiers' ORDER BY target",
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_identifiers_written_two_ways_are_one_entity_and_a_slip_is_queued(
    dsn: str, login: Callable[..., str], tmp_path: Path
) -> None:
    writer, curator = login("kgrag_writer", "t1"), login("kgrag_curator", "t1")
    cli_ingest(writer, tmp_path, DOCS)
    assert entities(writer) == {
        "person:#12345678900": ["form-c"],
        "person:#cpf12345678900": ["form-a", "form-b"],  # case and separators are no part of a code
        "person:#emp0024": ["badge-2"],
        "person:#emp0042": ["badge-1"],
        "person:#emp0043": ["badge-3"],
        "website:#contoso com prices": ["web-1", "web-2"],  # scheme, www, port, fragment, case
    }
    # the same digits with other letters, and two digits swapped: a curator's to decide (the next
    # number of a series is not)
    assert queue(dsn, curator) == [
        "identifiers:person:#12345678900+person:#cpf12345678900",
        "identifiers:person:#emp0024+person:#emp0042",
    ]
    made_up = tsql(curator, "SELECT kgrag.approve('identifiers:person:#emp0024+person:#nobody', 'made up')")
    assert "no review item or entity is" in made_up.stderr, made_up.stderr  # a target that names nothing
    approved = tsql(curator, "SELECT kgrag.approve('identifiers:person:#emp0024+person:#emp0042', 'two people')")
    assert approved.stdout == "approved identifiers:person:#emp0024+person:#emp0042", approved.stderr
    assert queue(dsn, curator) == ["identifiers:person:#12345678900+person:#cpf12345678900"]

    # the tenant compares its people's identifiers by their digits: the next build keys them anew
    refused = tsql(
        writer,
        "INSERT INTO kgrag.settings (tenant_id, key, value)"
        """ VALUES ('t1', 'identifier_kinds', '{"Person": "digit"}')""",
    )
    assert 'takes one of ["code", "digits", "url"] for each key, got "digit"' in refused.stderr, refused.stderr
    set_kind = tsql(
        writer,
        "INSERT INTO kgrag.settings (tenant_id, key, value)"
        """ VALUES ('t1', 'identifier_kinds', '{"Person": "digits"}')""",
    )
    assert set_kind.returncode == 0 and "ERROR" not in set_kind.stderr, set_kind.stderr
    built = run("build", "--tenant", "t1", dsn=writer)
    assert built.returncode == 0, built.stdout + built.stderr
    said = " ".join(built.stdout.split())
    assert "documents applied again (their identifiers compared anew): 5" in said, built.stdout
    assert entities(writer) == {
        "person:#0024": ["badge-2"],
        "person:#0042": ["badge-1"],
        "person:#0043": ["badge-3"],
        "person:#12345678900": ["form-a", "form-b", "form-c"],
        "website:#contoso com prices": ["web-1", "web-2"],
    }
    out = tsql(
        writer,
        "SELECT name, (SELECT count(*) FROM kgrag.entity WHERE entity_id LIKE 'person:#cpf%') FROM kgrag.entity"
        " WHERE entity_id = 'person:#12345678900'",
    )
    assert out.stdout.splitlines() == ["Ana Lima|0"]  # the first document's spelling, out.stdout
    assert queue(dsn, curator) == []  # one entity now
    again = run("build", "--tenant", "t1", dsn=writer)  # nothing left to apply again
    assert "applied again" not in again.stdout, again.stdout


def test_one_character_replaced_is_a_slip_between_entities_of_one_name(
    dsn: str, login: Callable[..., str], tmp_path: Path
) -> None:
    """A CPF with one digit replaced under the same name is queued (a typing slip); the next number
    of a series under another name is not, nor are the numbers of a staff list, one character or
    two swapped digits apart, each under its own name."""
    writer, curator = login("kgrag_writer", "t1"), login("kgrag_curator", "t1")
    staff = [person(f"s{n}", f"Employee {n}", f"EMP-{n:04d}") for n in range(10, 40)]  # 0012/0021, 0013/0031 ...
    cli_ingest(
        writer,
        tmp_path,
        [
            person("p1", "Carla Mendes", "CPF 123.456.789-00"),
            person("p2", "Carla Mendes", "CPF 123.456.789-01"),
            person("p3", "Davi Rocha", "CPF 123.456.789-02"),
            person("p4", "E. Costa", "EMP-9012"),  # two digits swapped under a short form of the name
            person("p5", "Eva Costa", "EMP-9102"),
            # (review) the same one written otherwise: words in another order, a middle initial, a
            # title; a slip in each number
            person("p6", "Mendes, Carla", "QQ-5566"),
            person("p7", "Carla M. Mendes", "QQ-5656"),
            person("p8", "Dra. Helena Souza", "HS-1020"),
            person("p9", "Helena Souza", "HS-10200"),
            person("p10", "Eva Lima", "EMP-9103"),  # another Eva, another surname: no slip of Eva Costa's
            *staff,
        ],
    )
    assert queue(dsn, curator) == [
        "identifiers:person:#cpf12345678900+person:#cpf12345678901",
        "identifiers:person:#emp9012+person:#emp9102",
        "identifiers:person:#hs1020+person:#hs10200",
        "identifiers:person:#qq5566+person:#qq5656",
    ]


def test_a_title_and_a_surname_are_the_full_name_of_the_same_note(
    dsn: str, login: Callable[..., str], tmp_path: Path
) -> None:
    writer = login("kgrag_writer", "t1")
    path = tmp_path / "notes.txt"
    path.write_text(
        "Grace Liu opened the stand-up for the Ledger Team. Later Ms. Liu asked Omar Haddad for a budget.\n"
    )
    done = run("ingest", str(path), "--embedder", "hash", "--tenant", "t1", dsn=writer)
    assert done.returncode == 0, done.stdout + done.stderr
    out = tsql(
        writer,
        "SELECT entity_id FROM kgrag.entity WHERE type = 'Name' ORDER BY 1",
        "SELECT entity_id, hop FROM kgrag.k_hop(ARRAY['Grace Liu'], 1) WHERE hop > 0 ORDER BY 1",
    )
    lines = out.stdout.splitlines()
    assert "name:liu" not in lines and "name:ms liu" not in lines and "name:grace liu" in lines, out.stdout
    # her manager, named once beside "Ms. Liu", is one step from her
    assert "name:omar haddad|1" in lines, out.stdout
