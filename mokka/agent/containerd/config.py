"""containerd's configuration, edited: pure functions from text to text.

Two outputs, both functions of the host's own configuration and Mokka's settings:

- ``edit_main``: the host's config.toml with an ``imports`` entry covering
  Mokka's file added where none covers it (tomlkit, so the host's comments and
  layout survive), or a minimal configuration when the host has none.
- ``drop_in``: Mokka's file (50-mokka.toml). containerd before 2.1 takes a
  plugin's WHOLE table from an imported file, so each table Mokka touches starts
  as a copy of the host's own (the last file that sets it, in import order) and
  only then gets CDI (``enable_cdi``, the spec dirs) and NRI (on, at the plugin's
  socket). With a handler table from nvidia-ctk (the toolkit path) that file is
  the starting point instead: nvidia-ctk copied the host's tables itself.

Version 2 (containerd 1.7) is proven against a real containerd 1.7.24; version 3
(containerd 2.x) is covered by golden files only, as no 2.x runs here.
"""

from __future__ import annotations

import copy
import posixpath
import tomllib
from dataclasses import dataclass
from pathlib import PurePosixPath

import tomlkit
import tomlkit.exceptions

from mokka.core import names

HEADER = ("Written by Mokka's node agent (cri simulator); removed when it tears down.\n"
          "containerd before 2.1 takes an imported plugin table whole: each table here\n"
          "is the host's own, copied on every Apply, plus CDI and NRI.")


class ConfigError(ValueError):
    """The host's configuration cannot be edited; the message names the file and the fix."""


@dataclass(frozen=True)
class Settings:
    config: str = names.CONTAINERD_CONFIG          # host paths, as containerd sees them
    config_dir: str = names.CONTAINERD_CONFIG_DIR
    cdi_spec_dir: str = names.CDI_SPEC_DIR
    nri_socket: str = names.NRI_SOCKET_PATH        # "" leaves NRI as the host has it

    @property
    def drop_in(self) -> str:
        return posixpath.join(self.config_dir, names.CONTAINERD_DROP_IN_FILE)

    @property
    def import_entry(self) -> str:
        return posixpath.join(self.config_dir, names.CONTAINERD_IMPORT_GLOB)


def minimal_main(s: Settings) -> str:
    return f"version = 2\nimports = [{_quote(s.import_entry)}]\n"


def _quote(text: str) -> str:
    return tomlkit.string(text).as_string()


def load(text: str, where: str) -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where} is not valid TOML ({exc}); fix it or run with "
                          f"--container-runtime=none") from None


def version_of(doc: dict, where: str) -> int:
    version = doc.get("version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version not in (1, 2, 3):
        raise ConfigError(f"{where}: containerd config version {version!r} is not 1, 2 or 3; "
                          f"fix it or run with --container-runtime=none")
    return version


def imports_of(doc: dict, where: str) -> list[str]:
    imports = doc.get("imports", [])
    if not isinstance(imports, list) or not all(isinstance(i, str) for i in imports):
        raise ConfigError(f"{where}: imports must be a list of paths; fix it or run with "
                          f"--container-runtime=none")
    return imports


def resolve_import(entry: str, config: str) -> str:
    """An imports entry as containerd reads it: relative to the importing file's dir."""
    return entry if posixpath.isabs(entry) else posixpath.join(posixpath.dirname(config), entry)


def covers(imports: list[str], path: str, config: str) -> bool:
    """Whether an entry (a path or a glob, as Go's filepath.Match) names ``path``."""
    target = PurePosixPath(path)
    for entry in imports:
        pattern = resolve_import(entry, config)
        if PurePosixPath(pattern) == target or (
                len(PurePosixPath(pattern).parts) == len(target.parts) and target.match(pattern)):
            return True
    return False


def edit_main(text: str | None, s: Settings) -> str:
    """The host's config.toml importing Mokka's dir; ``text`` itself when an entry covers it."""
    if text is None:
        return minimal_main(s)
    imports = imports_of(load(text, s.config), s.config)
    if covers(imports, s.drop_in, s.config):
        return text
    try:
        doc = tomlkit.parse(text)
    except tomlkit.exceptions.ParseError as exc:
        raise ConfigError(f"{s.config} is not valid TOML ({exc}); fix it or run with "
                          f"--container-runtime=none") from None
    if "imports" in doc:
        doc["imports"].append(s.import_entry)
    else:
        doc.add("imports", [s.import_entry])
    return tomlkit.dumps(doc)


def cri_plugin(version: int) -> str:
    return names.CONTAINERD_CRI_PLUGIN_V3 if version >= 3 else names.CONTAINERD_CRI_PLUGIN_V2


def plugin_key(plugin: str, version: int) -> str:
    """A plugin's key in a file of ``version``: version 1 names plugins by short id."""
    return names.CONTAINERD_V1_PLUGIN_NAMES.get(plugin, plugin) if version == 1 else plugin


def host_table(docs: list[dict], plugin: str) -> dict:
    """The table containerd would use for ``plugin``: the last file's that sets it."""
    found: dict = {}
    for doc in docs:
        plugins = doc.get("plugins") or {}
        key = plugin_key(plugin, doc.get("version", 1))
        if isinstance(plugins.get(key), dict):
            found = plugins[key]
    return copy.deepcopy(found)


def drop_in(sources: list[tuple[str, str]], s: Settings, handler: str | None = None) -> str:
    """Mokka's file. ``sources``: (path, text) of the host's config.toml first, then each
    file it imports, in containerd's order, Mokka's own left out. ``handler``: the file
    nvidia-ctk wrote, whose tables (the ``nvidia`` handler) are kept."""
    docs = [load(text, path) for path, text in sources]
    # The host's version: containerd 1.7 refuses a version 2 import into a version 1
    # main file ('invalid plugin key URI "cri"'), so Mokka's file follows the host's.
    version = version_of(docs[0], sources[0][0]) if docs else 2
    plugins: dict = {}
    if handler is not None:
        plugins = copy.deepcopy(load(handler, "nvidia-ctk's output").get("plugins") or {})
    cri_plugin_id = cri_plugin(version)
    cri_key = plugin_key(cri_plugin_id, version)
    cri = plugins.pop(cri_key, None) or host_table(docs, cri_plugin_id)
    cri["enable_cdi"] = True
    spec_dirs = list(cri.get("cdi_spec_dirs") or names.CONTAINERD_DEFAULT_CDI_SPEC_DIRS)
    if s.cdi_spec_dir not in spec_dirs:
        spec_dirs.append(s.cdi_spec_dir)
    cri["cdi_spec_dirs"] = spec_dirs
    out = {cri_key: cri, **plugins}
    if s.nri_socket:
        nri_key = plugin_key(names.CONTAINERD_NRI_PLUGIN, version)
        nri = out.pop(nri_key, None) or host_table(docs, names.CONTAINERD_NRI_PLUGIN)
        nri["disable"] = False
        nri["socket_path"] = s.nri_socket
        out[nri_key] = nri
    doc = tomlkit.document()
    for line in HEADER.splitlines():
        doc.add(tomlkit.comment(line))
    doc.add("version", version)
    doc.add("plugins", out)
    return tomlkit.dumps(doc)
