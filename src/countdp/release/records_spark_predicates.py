"""Each predicate of a records release analysed by Spark over the records, nothing run: the Spark engine's
counterpart of :mod:`countdp.release.records_bind`, refusing what it refuses, in the same words.

A predicate must be one boolean expression of the record's own columns: no aggregate, no subquery
(:func:`has_subquery`: it could read other people's records), and no conversion of a text column to another
type (:func:`text_conversions`), which Spark's analysed plan shows as a ``Cast``, explicit or inserted by its
type coercion.  Spark groups with ANSI mode off, so such a cast gives NULL for a value that does not convert;
DuckDB's would stop the release.  Refusing it on both engines from the schema alone makes the two agree, and
points to the declaration (``--type age=INTEGER``), which converts with ``try_cast``.
"""

from __future__ import annotations

from countdp.release.records import ROW_LOCAL, VOLATILE, RecordsSpec, conversion

VIEW = "countdp_records"


def spark_error(exc: BaseException) -> str:
    """A Spark error in one line: its first non-blank line, without the stack."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__



def check_predicates(spark, spec: RecordsSpec, spell) -> None:
    """Each predicate analysed by Spark over the records (nothing run): boolean, without an aggregate,
    without a subquery (:func:`has_subquery`), without a conversion of a text column (:func:`text_conversions`),
    each refused as the DuckDB engine refuses it."""
    from pyspark.sql.types import BooleanType  # lazy: likewise

    flag = spell.repeated("count", "counts")
    for name, predicate in spec.counts:
        shown = f"{flag} {name}={predicate!r}"
        if ";" in predicate:
            raise ValueError(f"{shown}: not one expression")
        try:
            selected = spark.sql(f"SELECT ({predicate}) AS p FROM {VIEW}")
            kind = selected.schema["p"].dataType
            if not isinstance(kind, BooleanType):
                raise ValueError(f"{shown}: not a true-or-false expression over the records (it gives "
                                 f"{kind.simpleString().upper()})")
            if has_subquery(spark, selected):
                raise ValueError(f"{shown}: {ROW_LOCAL}")
            if raises(selected):
                raise ValueError(f"{shown}: {VOLATILE}")
            if reads_pattern(selected):
                raise ValueError(f"{shown}: {PATTERN_READ}")
            if raises_on_a_value(selected):
                raise ValueError(f"{shown}: {VALUE_RAISING_TEXT}")
            converted = text_conversions(selected)
            if converted:
                raise conversion(shown, *converted[0], spell)
            _ = spark.sql(f"SELECT count(*) FILTER (WHERE ({predicate})) FROM {VIEW}").schema  # analysed, not run
        except ValueError:
            raise
        except Exception as exc:  # Spark's analysis and parse errors share no base class outside pyspark
            raise ValueError(f"{shown}: {spark_error(exc)}") from None


def has_subquery(spark, selected) -> bool:
    """Whether the analysed plan of ``selected`` (``SELECT (predicate) AS p FROM`` the records) holds a
    subquery in its expressions (Catalyst's ``SubqueryExpression.hasSubquery``: scalar, ``IN``, ``EXISTS``)."""
    subquery = spark._jvm.org.apache.spark.sql.catalyst.expressions.SubqueryExpression
    return any(subquery.hasSubquery(root) for root in _roots(selected))


RAISING = ("RaiseError", "CallMethodViaReflection")
"""Catalyst's expressions that raise an error whatever ANSI mode says: ``raise_error`` (and ``assert_true``, made of
it), and ``reflect``/``java_method``, which run any Java method."""


def raises(selected) -> bool:
    """Whether the analysed predicate of ``selected`` is not deterministic (``rand()``: DuckDB's ``TRY`` refuses a
    volatile function) or holds an expression of :data:`RAISING`."""
    roots = _roots(selected)
    return any(not root.deterministic() for root in roots) or any(_kind(node) in RAISING for node in _nodes(roots))


PATTERNED = ("Like", "ILike", "RLike", "RegExpReplace", "RegExpExtract", "RegExpExtractAll", "RegExpCount",
             "RegExpInStr", "RegExpSubStr", "StringSplit", "ParseToDate", "ParseToTimestamp", "GetTimestamp",
             "UnixTimestamp", "ToUnixTimestamp", "DateFormatClass")
"""Catalyst's expressions whose second argument is a pattern (a regular expression, a ``LIKE`` pattern, a date
format) that Spark compiles as it evaluates a row, and which raises, ANSI mode or not, where it does not compile."""

PATTERN_READ = ("a pattern read from the records (a regular expression, LIKE pattern or date format that is not a "
                "literal) is refused on Spark, where one person's value that does not compile would stop the "
                "grouping; give the pattern as a literal, or group on DuckDB (--engine duckdb), where such a "
                "value is NULL for that record")
"""Why Spark refuses a predicate whose pattern is read from the records (:func:`reads_pattern`)."""


def reads_pattern(selected) -> bool:
    """Whether the analysed predicate of ``selected`` holds an expression of :data:`PATTERNED` whose pattern is not
    a constant (``'1' RLIKE code``): Spark has no ``TRY``, so a person whose value is not a pattern would decide
    whether the grouping runs.  A constant pattern is the same for every neighbour."""
    roots = _roots(selected)
    for node in _nodes(roots):
        if _kind(node) in PATTERNED and node.children().size() > 1 and not node.children().apply(1).foldable():
            return True
    return False


VALUE_RAISING = ("UrlDecode", "ToBinary", "UnBase64", "ToNumber", "AesDecrypt", "XPathBoolean", "XPathShort",
                 "XPathInt", "XPathLong", "XPathFloat", "XPathDouble", "XPathString", "XPathList")
"""Catalyst's functions that raise on a value they cannot convert, ANSI mode or not (``url_decode('%zz')``,
``to_binary('zz', 'hex')``, ``unbase64``, ``to_number``, ``aes_decrypt`` of a bad ciphertext, ``xpath`` of
text that is not XML); their ``try_`` forms give NULL."""

VALUE_RAISING_TEXT = ("a function that raises on a value it cannot convert (url_decode, to_binary, unbase64, "
                      "to_number, aes_decrypt, xpath) is refused on Spark, where one person's value would stop the "
                      "grouping; use its try_ form (try_url_decode, try_to_binary, try_to_number, try_aes_decrypt), "
                      "or group on DuckDB (--engine duckdb)")
"""Why Spark refuses a predicate with a function of :data:`VALUE_RAISING` (:func:`raises_on_a_value`)."""


def raises_on_a_value(selected) -> bool:
    """Whether the analysed predicate of ``selected`` holds a function of :data:`VALUE_RAISING` outside a ``try_``
    form (Spark's ``try_url_decode`` is a ``TryUrlDecode`` over a ``UrlDecode``; ``try_to_binary`` a ``TryEval``)."""
    stack = _roots(selected)
    while stack:
        node = stack.pop()
        kind = _kind(node)
        if kind.startswith("Try"):
            continue  # what a try_ form holds gives NULL where it would raise
        if kind in VALUE_RAISING:
            return True
        children = node.children()
        stack.extend(children.apply(k) for k in range(children.size()))
    return False


COMPARISONS = ("EqualTo", "EqualNullSafe", "LessThan", "LessThanOrEqual", "GreaterThan", "GreaterThanOrEqual", "In",
               "InSet")
"""Catalyst's comparisons, where Spark's coercion may turn a number into text to compare it with a text column."""


def text_conversions(selected) -> list[tuple[str, str]]:
    """``(column, type)`` for each conversion of a text column in the analysed plan of ``selected`` (``SELECT
    (predicate) AS p FROM`` the records), as :func:`countdp.release.records_bind.text_casts` finds on DuckDB: a
    ``Cast`` that is not ``try_cast`` of text read from a column to another type (``CAST(age AS INT)``, or the one
    Spark's coercion inserts for ``age < 30``), and a number cast to text to be compared with a text column
    (Spark's coercion of ``age IN (30, 40)``, which DuckDB's makes a cast of ``age``)."""
    roots = _roots(selected)
    shared = {node.id().toString(): node.child() for node in _nodes(roots) if _kind(node) == "CommonExpressionDef"}
    found = []
    stack = [(node, None) for node in roots]
    while stack:
        node, parent = stack.pop()
        if _kind(node) == "Cast" and node.evalMode().toString() != "TRY":
            child = node.child()
            source, target = _text(child.dataType()), _text(node.dataType())
            if source and not target:
                found += [(name, node.dataType().simpleString()) for name in _columns_read(child, shared)]
            elif target and not source and child.foldable() and parent is not None and _kind(parent) in COMPARISONS:
                found += [(name, child.dataType().simpleString()) for name in _columns_read(parent, shared)
                          if name in _text_columns(parent)]
        children = node.children()
        stack.extend((children.apply(k), node) for k in range(children.size() - 1, -1, -1))
    return found


def _roots(selected) -> list:
    """The expressions of the analysed plan of ``selected`` (``SELECT (predicate) AS p FROM`` the records)."""
    expressions = selected._jdf.queryExecution().analyzed().expressions()
    return [expressions.apply(k) for k in range(expressions.size())]


def _kind(node) -> str:
    return node.getClass().getSimpleName()


def _nodes(roots) -> list:
    """Every node of the expression trees ``roots``."""
    found, stack = [], list(roots)
    while stack:
        node = stack.pop()
        found.append(node)
        children = node.children()
        stack.extend(children.apply(k) for k in range(children.size()))
    return found


def _columns_read(expression, shared: dict) -> list[str]:
    """The columns ``expression`` reads, through Spark 4's common expressions (``BETWEEN`` reads its input once,
    as a ``CommonExpressionRef`` to a definition elsewhere in the plan)."""
    names, stack = [], [expression]
    while stack:
        node = stack.pop()
        kind = _kind(node)
        if kind == "AttributeReference":
            names.append(node.name())
        elif kind == "CommonExpressionRef" and node.id().toString() in shared:
            stack.append(shared[node.id().toString()])
        children = node.children()
        stack.extend(children.apply(k) for k in range(children.size()))
    return list(dict.fromkeys(names))


def _text(kind) -> bool:
    return kind.simpleString().lower().startswith(("string", "varchar", "char"))


def _text_columns(expression) -> list[str]:
    """The names of the text columns ``expression`` reads."""
    read = expression.references().toSeq()
    return [read.apply(k).name() for k in range(read.size()) if _text(read.apply(k).dataType())]


__all__ = ["COMPARISONS", "PATTERNED", "PATTERN_READ", "RAISING", "VIEW", "check_predicates", "has_subquery",
           "raises", "raises_on_a_value", "reads_pattern", "spark_error", "text_conversions", "VALUE_RAISING",
           "VALUE_RAISING_TEXT"]
