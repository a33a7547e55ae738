"""YAML reading and writing, one way: libyaml's C loader when PyYAML has it, within bounds.

The pure-Python SafeLoader takes ~15 ms for a CDI spec or a profile; the C
loader a tenth of that, and it is what ``import yaml`` has loaded anyway.
Import this module only where YAML is read (never on nvidia-smi's -L path).

Every document is first walked as a stream of parser events, which builds
nothing: nesting deeper than ``names.MAX_DOCUMENT_DEPTH``, more than
``names.MAX_DOCUMENT_NODES`` nodes once every alias is expanded (an alias
counts as the whole node it names, so a "billion laughs" bomb is refused after
a few hundred events), and an alias inside the node it names (a cycle) are
refused there, as a ``LimitError`` with the line and column. Only then does
the loader compose and construct, which shares aliased nodes and so stays
within the same bound.
"""

from __future__ import annotations

import yaml

from mokka.core import names

YAMLError = yaml.YAMLError
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
#: libyaml's emitter where PyYAML has it: the same bytes as the Python one, ten times faster.
SafeDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_OPEN = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSE = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


class LimitError(yaml.MarkedYAMLError):
    """A document over a bound (depth, expanded nodes) or with a cyclic alias."""

    def __init__(self, problem: str, mark):
        super().__init__(problem=problem, problem_mark=mark)


def check_bounds(data, max_nodes: int = names.MAX_DOCUMENT_NODES,
                 max_depth: int = names.MAX_DOCUMENT_DEPTH) -> int:
    """Expanded node count of ``data`` (every document in it); LimitError past a bound."""
    parser = _Loader(data)
    try:
        stack: list[list] = []              # [anchor, expanded nodes so far] per open collection
        sizes: dict[str, int] = {}          # anchor -> expanded nodes of the node it names
        total = 0
        while parser.check_event():
            event = parser.get_event()
            if isinstance(event, _OPEN):
                if len(stack) >= max_depth:
                    raise LimitError(f"nested deeper than {max_depth} levels (the limit)",
                                     event.start_mark)
                stack.append([event.anchor, 1])
                size = 1
            elif isinstance(event, _CLOSE):
                anchor, size = stack.pop()
                if anchor is not None:
                    sizes[anchor] = size
                if stack:
                    stack[-1][1] += size
                continue
            elif isinstance(event, yaml.ScalarEvent):
                size = 1
                if event.anchor is not None:
                    sizes[event.anchor] = 1
            elif isinstance(event, yaml.AliasEvent):
                if any(frame[0] == event.anchor for frame in stack):
                    raise LimitError(f"alias *{event.anchor} is inside the node it names "
                                     "(a cycle)", event.start_mark)
                size = sizes.get(event.anchor, 1)   # undefined: the composer says so
            else:
                continue
            total += size
            if total > max_nodes:
                raise LimitError(f"more than {max_nodes} nodes with aliases expanded "
                                 "(the limit)", event.start_mark)
            if stack and not isinstance(event, _OPEN):
                stack[-1][1] += size
        return total
    finally:
        parser.dispose()


def _read(data):
    return data.read() if hasattr(data, "read") else data


def safe_load(data):
    """``yaml.safe_load`` semantics (plain data only), C-accelerated, within the bounds."""
    data = _read(data)
    check_bounds(data)
    return yaml.load(data, Loader=_Loader)


# --- profiles: plain data only, keys by their text ------------------------------

def _refuse_tag(loader, node):
    raise yaml.constructor.ConstructorError(
        None, None, f"the tag {node.tag} is not allowed here; use plain mappings, lists and "
        "scalars", node.start_mark)


class _ProfileLoader(_Loader):
    """Safe loading as the Go loader reads a profile: a mapping key is its text (``1:`` and
    ``yes:`` are the keys "1" and "yes"), a key whose value is null is left out (Go's zero
    value), a timestamp is the string written, and the tags that build sets, ordered pairs
    or bytes are refused."""

    def construct_mapping(self, node, deep=False):
        if not isinstance(node, yaml.MappingNode):
            raise yaml.constructor.ConstructorError(None, None, "expected a mapping",
                                                    node.start_mark)
        self.flatten_mapping(node)
        mapping = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise yaml.constructor.ConstructorError(
                    None, None, "a mapping key must be a scalar, not a list or a mapping",
                    key_node.start_mark)
            value = self.construct_object(value_node, deep=deep)
            if value is not None:          # Go: null is the zero value, i.e. the field left out
                mapping[key_node.value] = value
            else:
                mapping.pop(key_node.value, None)
        return mapping


_ProfileLoader.add_constructor("tag:yaml.org,2002:timestamp",
                               yaml.constructor.SafeConstructor.construct_yaml_str)
for _tag in ("set", "omap", "pairs", "binary"):
    _ProfileLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse_tag)


def load_profile(data):
    """A profile document: bounded like ``safe_load``, keys as text, plain data only."""
    data = _read(data)
    check_bounds(data)
    return yaml.load(data, Loader=_ProfileLoader)


class _PlainDumper(SafeDumper):
    def ignore_aliases(self, data):        # the staged copy is plain: no anchors to follow
        return True


def dump(doc) -> bytes:
    """A document as block-style YAML, keys in their order, every alias written out."""
    return yaml.dump(doc, Dumper=_PlainDumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True, width=4096).encode()


def dump_all(docs) -> bytes:
    """Documents as one YAML stream (``---`` between them), as ``dump`` writes each."""
    return yaml.dump_all(docs, Dumper=_PlainDumper, sort_keys=False, default_flow_style=False,
                         allow_unicode=True, width=4096, explicit_start=True).encode()
