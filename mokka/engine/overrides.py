"""The runtime overrides, written: one document per scope in the overrides directory.

``all.yaml`` holds what every GPU gets, ``gpu<N>.yaml`` what physical GPU N gets
(names.overrides_scope_file), each a mapping in the shape of a GPU's state, with
its compiled companion beside it: the mock NVML library reads only those, and
layers a GPU's own document over ``all`` over the profile (native/nvml/engine/lookup.c).
Writers: ``mokka ctl set/reset/ecc/nvlink``, ``mokka compile --companion`` for a document
written by hand (any YAML: flow style, anchors, JSON). Resetting a GPU removes
its two files, as NVIDIA's ``nvidia-smi -r`` does through the library; it keeps
``lasting-gpu<N>.yaml``, what a real GPU keeps across a reset (the aggregate ECC
counts, remapped rows and retired pages ``ctl ecc`` raises), layered under the GPU's own.

Every container can write the directory (driver/config is bound writable), and
root runs ``mokka ctl`` too: the directory is opened without following a link and
every name is looked up in it (a link swapped in for it sends nothing elsewhere);
a document is read without following a link or blocking, bounded, and parsed as
data before anything of it is written back; what is in the place of the directory
or of a document and is not one (a link, a FIFO, a directory) is removed. A
document's values are of the types its keys take in a GPU's state (check_types):
what YAML reads as a date, binary data or a set is refused by name, and ``ctl set``
merges into no such document. Errors name the file and the reason, never a value
read from it.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import math
import os

from mokka.core import names


class OverridesError(Exception):
    pass


class ValueRefused(OverridesError):
    """A document that parses, holding a value of a type its key does not take (a date,
    binary data, a set, a number where a mapping goes): ``key`` names it, ``problem`` says it."""

    def __init__(self, path: str, key: str, problem: str):
        super().__init__(f"ignoring overrides {path}: {key} {problem}")
        self.path, self.key, self.problem = path, key, problem


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_dir(directory: str, create: bool, claim: bool) -> int | None:
    """An fd on the overrides directory, never through a link; None when it is absent
    (and not ``create``). Anything else in its place is removed by a writer (``claim``:
    the place is Mokka's) and refused to a reader."""
    made = False
    for _ in range(3):
        try:
            fd = os.open(directory, _DIR_FLAGS)
        except FileNotFoundError:
            if not create:
                return None
            try:
                os.mkdir(directory, 0o755)
                made = True
            except FileExistsError:
                pass
            continue
        except NotADirectoryError:             # a link (O_NOFOLLOW), a file, a FIFO
            if not claim:
                raise OverridesError(f"ignoring overrides {directory}: not a directory (a link or a "
                                     "file); ctl set or ctl reset replaces it") from None
            os.unlink(directory)
            continue
        if made:
            os.fchmod(fd, 0o755)               # the mode, not the umask's
        return fd
    raise OverridesError(f"{directory}: replaced by something else on every try; "
                         "stop what keeps replacing it and run this again")


@contextlib.contextmanager
def _opened(directory: str, create: bool = False, claim: bool = True):
    fd = _open_dir(directory, create, claim)
    try:
        yield fd
    finally:
        if fd is not None:
            os.close(fd)


def scope_path(directory: str, physical_index: int | None) -> str:
    return os.path.join(directory, names.overrides_scope_file(physical_index))


def read(path: str) -> dict | None:
    """One scope's document (bounded YAML), None when absent or empty."""
    directory, name = os.path.split(path)
    with _opened(directory, claim=False) as fd:
        return None if fd is None else _read_at(fd, name, path)


def _read_at(fd: int, name: str, path: str) -> dict | None:
    from mokka.core import fsutil, yamlio

    try:
        text = fsutil.read_bounded(name, names.MAX_DOCUMENT_BYTES, follow=False, dir_fd=fd)
    except FileNotFoundError:
        return None
    except (OSError, fsutil.ReadRefused) as exc:
        raise OverridesError(f"cannot read overrides {path}: {getattr(exc, 'strerror', None) or exc}") \
            from None
    if not text.strip():
        return None
    try:
        doc = yamlio.safe_load(text)
    except (yamlio.YAMLError, RecursionError):
        raise OverridesError(f"ignoring overrides {path}: invalid YAML") from None
    if doc is None:
        return None
    if not isinstance(doc, dict):
        raise OverridesError(f"ignoring overrides {path}: not a mapping of GPU fields")
    check_types(doc, path)
    return doc


def check_types(doc: dict, path: str) -> None:
    """Every value of ``doc`` is of the type its key takes in a compiled GPU
    (mokka.engine.statekeys.GPU: an integer, a number, a string, true or false, a list, a
    mapping), a key the GPU does not declare holds plain data (those, nested), and every
    key is a string. ValueRefused names the first that is not and its type, never its
    value: what YAML reads as a date, a timestamp, binary data or a set is no reading."""
    from mokka.core import schema
    from mokka.engine import statekeys

    plain = schema.Any()
    todo = [("", doc, statekeys.GPU)]
    while todo:                                    # iterative: yamlio bounds the depth and nodes
        where, value, spec = todo.pop()
        if value is None:
            continue                               # a field left out
        types, noun = _takes(spec)
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise ValueRefused(path, _shown_key(where), f"is {_kind(value)}, not {noun}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueRefused(path, _shown_key(where), "is not a finite number (it is .nan or .inf)")
        if isinstance(value, dict):
            fields = spec.fields if isinstance(spec, schema.Map) else {}
            for key, item in value.items():
                if not isinstance(key, str):
                    raise ValueRefused(path, _shown_key(where) or "the document",
                                       f"has a key that is {_kind(key)}, not a string")
                todo.append((f"{where}.{key}" if where else key, item, fields.get(key, plain)))
        elif isinstance(value, list):
            item_spec = spec.item if isinstance(spec, schema.List) else plain
            todo.extend((f"{where}[{n}]", item, item_spec) for n, item in enumerate(value))


def _takes(spec) -> tuple[tuple, str]:
    """The Python types a schema spec takes after YAML, and how an error names them.
    ``Any`` (a key the GPU does not declare): plain data, checked item by item."""
    from mokka.core import schema

    if isinstance(spec, schema.Str):
        return ((str, int, float), "a string") if spec.numbers else ((str,), "a string")
    return _spec_types().get(type(spec), _PLAIN)


_PLAIN = ((dict, list, str, int, float, bool), "a string, number, boolean, list or mapping")


@functools.cache
def _spec_types() -> dict:
    from mokka.core import schema as s

    return {s.Int: ((int,), "an integer"), s.Reading: ((int, str), "an integer or N/A"),
            s.Number: ((int, float), "a number"), s.Bool: ((bool,), "true or false"),
            s.Id: ((int, str), "a number"), s.Scalar: ((str, int, float, bool), "a string, number or boolean"),
            s.Map: ((dict,), "a mapping"), s.List: ((list,), "a list")}


#: What YAML makes of a value that is no GPU reading, as an error names it.
_KINDS = {datetime.date: "a date", datetime.datetime: "a timestamp", bytes: "binary data (!!binary)",
          set: "a set (!!set)", tuple: "a pair (!!pairs or !!omap)"}


def _kind(value) -> str:
    from mokka.core import schema

    return _KINDS.get(type(value)) or schema.kind(value)


def _shown_key(key: str) -> str:
    """A key path as one line of at most 120 characters (keys are the document's own)."""
    if key.isprintable() and len(key) <= 120:
        return key
    quoted = repr(key)
    return quoted if len(quoted) <= 120 else quoted[:117] + "..."


def deep_merge(base: dict, extra: dict) -> dict:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            deep_merge(base[key], value)
        else:
            base[key] = value
    return base


def update(directory: str, physical_index: int, change: dict, lasting: bool = False) -> None:
    """Deep-merge ``change`` into GPU ``physical_index``'s document (``lasting``: the one a
    reset of the GPU keeps, names.overrides_lasting_file), under the directory's
    lock (waited for at most fsutil.LOCK_WAIT_S: fsutil.LockHeld names the holder).
    A document that cannot be read or parsed is replaced; one holding a value of the wrong
    type (ValueRefused) is left as it is and the change refused, naming the key: it may
    hold other values someone wrote by hand, which a merge would otherwise drop or carry."""
    from mokka.core import fsutil

    os.makedirs(os.path.dirname(directory) or ".", exist_ok=True)
    path = (os.path.join(directory, names.overrides_lasting_file(physical_index)) if lasting
            else scope_path(directory, physical_index))
    name = os.path.basename(path)
    with _opened(directory, create=True) as fd, fsutil.fd_locked(fd, directory):
        try:
            doc = _read_at(fd, name, path) or {}
        except ValueRefused as exc:
            how = "ctl reset GPU --lasting" if lasting else "ctl reset GPU"
            raise OverridesError(f"{path}: {exc.key} {exc.problem}; correct it or drop the GPU's "
                                 f"overrides ({how}), then run this again") from None
        except OverridesError:
            doc = {}                       # a broken document is replaced, as a fresh start
        _write_at(fd, name, _dump(deep_merge(doc, change)), None)


def reset(directory: str, physical_indices: list) -> bool:
    """Drop the named GPUs' documents; True if one was there."""
    return _remove(directory, [names.overrides_scope_file(index) for index in physical_indices])


def reset_lasting(directory: str, physical_indices: list) -> bool:
    """Drop what a reset of the named GPUs keeps (their lasting documents); True if one was there."""
    return _remove(directory, [names.overrides_lasting_file(index) for index in physical_indices])


def _remove(directory: str, yaml_names: list) -> bool:
    """Take each document pair out of the overrides directory; True if one was there."""
    from mokka.engine import pair

    with _opened(directory) as fd:
        if fd is None:
            return False
        removed = False
        for name in yaml_names:
            removed |= pair.remove_at(fd, name)
        return removed


def clear(directory: str) -> int:
    """Every override gone: ``all`` and every GPU's document (other files stay); how
    many documents were there."""
    from mokka.engine import pair

    with _opened(directory) as fd:
        if fd is None:
            return 0
        removed = 0
        for name in os.listdir(fd):
            stem, dot, suffix = name.rpartition(".")
            if dot and suffix == "yaml" and is_scope(stem):
                removed += bool(pair.remove_at(fd, name))
        return removed


def is_scope(stem: str) -> bool:
    """``all`` or ``gpu<N>``: the names of the documents the library reads."""
    number = stem[len(names.OVERRIDES_GPU_SCOPE_PREFIX):]
    return stem == names.OVERRIDES_ALL_SCOPE or (
        stem.startswith(names.OVERRIDES_GPU_SCOPE_PREFIX) and number.isdigit() and number.isascii())


def is_lasting(stem: str) -> bool:
    """``lasting-gpu<N>``: what a reset of GPU N keeps (names.overrides_lasting_file)."""
    number = stem[len(names.OVERRIDES_LASTING_SCOPE_PREFIX):]
    return stem.startswith(names.OVERRIDES_LASTING_SCOPE_PREFIX) and number.isdigit() and number.isascii()


def _dump(doc: dict) -> bytes:
    import yaml

    return yaml.safe_dump(doc, sort_keys=False).encode()


def write(path: str, doc: dict) -> None:
    """Write one scope's document and its companion (``gpu3.nvml``)."""
    write_text(path, _dump(doc), doc)


def write_text(path: str, text: bytes, doc: dict | None = None) -> None:
    """Write a scope's YAML as given and its compiled companion, in one step."""
    directory, name = os.path.split(path)
    with _opened(directory, create=True) as fd:
        _write_at(fd, name, text, doc)


def _write_at(fd: int, name: str, text: bytes, doc: dict | None) -> None:
    """The pair in the engine's order (mokka.engine.pair: the companion first, so a
    reader never sees a new YAML next to an old companion). Both are new files of mode
    0644 holding what Mokka wrote, whatever was at their names."""
    from mokka.engine import flatstate
    from mokka.engine import pair

    if doc is None:
        from mokka.core import yamlio
        doc = yamlio.safe_load(text)
    pair.write(name, text, flatstate.overrides_companion(doc, text), dir_fd=fd)
