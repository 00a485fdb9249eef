"""Reading the SQL text of installed functions (pglast, PostgreSQL's own parser): which statements
reference which kgrag tables, and whether each reference carries its own `tenant_id = ...`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pglast
from pglast import ast
from pglast.enums import A_Expr_Kind, BoolExprType
from pglast.visitors import Visitor

# RawParseMode of a PL/pgSQL expression: a full statement, an expression, or an assignment.
_STATEMENT, _ASSIGNMENTS = 0, {3, 4, 5}


def statements(definition: str, language: str, body: str) -> list[str]:
    """The SQL statements a function runs: its body (LANGUAGE sql), or every query and expression
    of its PL/pgSQL code (expressions as SELECT <expr>)."""
    if language == "sql":
        return [body]
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            expr = node.get("PLpgSQL_expr")
            if expr is not None:
                query, mode = expr["query"], expr.get("parseMode", _STATEMENT)
                if mode in _ASSIGNMENTS:
                    query = query.split(":=", 1)[1]
                found.append(query if mode == _STATEMENT else f"SELECT {query}")
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(json.dumps(pglast.parse_plpgsql(definition))))
    return found


@dataclass(frozen=True)
class Reference:
    table: str
    pinned: bool
    statement: str


def _conjuncts(node: Any) -> Iterator[Any]:
    if isinstance(node, ast.BoolExpr) and node.boolop == BoolExprType.AND_EXPR:
        for arg in node.args:
            yield from _conjuncts(arg)
    elif node is not None:
        yield node


def _from_items(items: Any) -> tuple[list[ast.RangeVar], list[Any]]:
    relations: list[ast.RangeVar] = []
    quals: list[Any] = []
    for item in items or ():
        if isinstance(item, ast.RangeVar):
            relations.append(item)
        elif isinstance(item, ast.JoinExpr):
            sub_relations, sub_quals = _from_items([item.larg, item.rarg])
            relations += sub_relations
            quals += sub_quals
            if item.quals is not None:
                quals.append(item.quals)
    return relations, quals


def _names_tenant(side: Any, name: str, alone: bool) -> bool:
    if not isinstance(side, ast.ColumnRef):
        return False
    fields = [f.sval for f in side.fields if isinstance(f, ast.String)]
    return bool(fields) and fields[-1] == "tenant_id" and (fields[:-1] == [name] or (len(fields) == 1 and alone))


def _pinned(relation: ast.RangeVar, predicates: list[Any], alone: bool) -> bool:
    name = relation.alias.aliasname if relation.alias else relation.relname
    for predicate in predicates:
        for c in _conjuncts(predicate):
            if (
                isinstance(c, ast.A_Expr)
                and c.kind == A_Expr_Kind.AEXPR_OP
                and [n.sval for n in c.name] == ["="]
                and (_names_tenant(c.lexpr, name, alone) or _names_tenant(c.rexpr, name, alone))
            ):
                return True
    return False


class _Scopes(Visitor):  # type: ignore[misc]
    """Every SELECT, UPDATE and DELETE: its own table references and its own predicates."""

    def __init__(self, statement: str, tables: set[str]) -> None:
        super().__init__()
        self.statement = statement
        self.tables = tables
        self.references: list[Reference] = []

    def _scope(self, relations: list[ast.RangeVar], predicates: list[Any]) -> None:
        alone = len(relations) == 1
        for r in relations:
            if r.schemaname == "kgrag":
                self.references.append(Reference(r.relname, _pinned(r, predicates, alone), self.statement))
            elif r.schemaname is None and r.relname in self.tables:
                self.references.append(Reference(f"unqualified {r.relname}", False, self.statement))

    def visit_SelectStmt(self, ancestors: Any, node: ast.SelectStmt) -> None:
        relations, quals = _from_items(node.fromClause)
        self._scope(relations, [node.whereClause, *quals])

    def visit_UpdateStmt(self, ancestors: Any, node: ast.UpdateStmt) -> None:
        relations, quals = _from_items(node.fromClause)
        self._scope([node.relation, *relations], [node.whereClause, *quals])

    def visit_DeleteStmt(self, ancestors: Any, node: ast.DeleteStmt) -> None:
        relations, quals = _from_items(node.usingClause)
        self._scope([node.relation, *relations], [node.whereClause, *quals])


def table_references(sql_text: str, tables: set[str]) -> list[Reference]:
    """Each reference to a kgrag table in the statement (an unqualified name of one of `tables`
    counts too, as a fault), and whether it carries tenant_id = ..."""
    scopes = _Scopes(sql_text, tables)
    for raw in pglast.parse_sql(sql_text):
        scopes(raw.stmt)
    return scopes.references
