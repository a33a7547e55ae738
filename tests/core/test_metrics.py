"""mokka.core.metrics: what it renders is what Prometheus' own parser reads back."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from mokka.core import metrics as m


def parsed(registry: m.Registry) -> dict:
    """sample name + sorted labels -> value, through prometheus-client's parser."""
    out = {}
    for family in text_string_to_metric_families(registry.render() + "\n"):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_counters_and_labelled_counters_parse_with_their_values():
    reg = m.Registry()
    plain = reg.add(m.Counter("x_total", "things"))
    by = reg.add(m.Counter("y_total", "things by reason", ("reason",), initial=[("a",)]))
    plain.inc()
    plain.inc(n=2)
    by.inc('we"ird\\one\n')
    got = parsed(reg)
    assert got[("x_total", ())] == 3
    assert got[("y_total", (("reason", "a"),))] == 0
    assert got[("y_total", (("reason", 'we"ird\\one\n'),))] == 1


def test_histogram_buckets_are_cumulative_and_le_inclusive():
    reg = m.Registry()
    h = reg.add(m.Histogram("d_seconds", "latency", buckets=(0.1, 1.0)))
    for v in (0.05, 0.1, 0.5, 3.0):
        h.observe(v)
    got = parsed(reg)
    assert got[("d_seconds_bucket", (("le", "0.1"),))] == 2
    assert got[("d_seconds_bucket", (("le", "1.0"),))] == 3
    assert got[("d_seconds_bucket", (("le", "+Inf"),))] == 4
    assert got[("d_seconds_count", ())] == 4
    assert got[("d_seconds_sum", ())] == 3.65


def test_gauge_reads_its_source_at_render_time():
    reg = m.Registry()
    up = {"a": True, "b": False}
    reg.add(m.Gauge("up", "up", ("name",), source=lambda: [((k,), int(v)) for k, v in up.items()]))
    assert parsed(reg)[("up", (("name", "b"),))] == 0
    up["b"] = True
    assert parsed(reg)[("up", (("name", "b"),))] == 1
    families = list(text_string_to_metric_families(reg.render()))
    assert [(f.name, f.type) for f in families] == [("up", "gauge")]
