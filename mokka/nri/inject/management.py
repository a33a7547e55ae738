"""Management CDI devices named by the container toolkit's NRI annotations.

Facts §11, behind the ToolkitCDIAnnotations feature gate. The key
is resolved like containerd/nri's GetEffectiveAnnotation: the container-scoped
``nvidia.cdi.k8s.io/container.<name>``, else ``nvidia.cdi.k8s.io/pod``, else
the bare ``nvidia.cdi.k8s.io``; the first PRESENT key wins, even when empty.
The value is split on ',' without trimming, as the toolkit does.

Restricted to the configured namespaces; a list in any other namespace is
refused as a whole (as the toolkit's #1854 blocks a mixed list), so a pod
cannot get part of what it asked for and look as if it got all of it.

These devices are neither GPU allocation evidence nor a reason to add the
overlay: they select themselves and nothing else.
"""

from __future__ import annotations

from mokka.core import names
from mokka.nri.inject import cdi
from mokka.nri.inject.draft import Draft
from mokka.nri.inject.model import Config, Container, NodeView, Pod

REFUSED = "toolkit CDI annotation {key} refused: namespace {namespace!r} is not allowed"
INVALID = "toolkit CDI annotation {key}: {name!r} is not a fully qualified CDI name; skipped"
NO_EDITS = "runtime cannot take CDI devices and no staged spec has edits for {name}; skipped"


def annotation_keys(container_name: str) -> tuple[str, str, str]:
    """The keys in lookup order: container scope, pod scope, bare domain."""
    return (f"{names.TOOLKIT_CDI_ANNOTATION_CONTAINER_PREFIX}{container_name}",
            names.TOOLKIT_CDI_ANNOTATION_POD,
            names.TOOLKIT_CDI_ANNOTATION)


def requested(config: Config, pod: Pod, container: Container) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(CDI names to deliver, warnings) for this container."""
    if not config.toolkit_cdi_annotations:
        return (), ()
    for key in annotation_keys(container.name):
        if key in pod.annotations:
            value = pod.annotations[key]
            break
    else:
        return (), ()
    entries = [entry for entry in value.split(",") if entry] if isinstance(value, str) else []
    if not entries:
        return (), ()
    if pod.namespace not in config.cdi_annotation_namespaces:
        return (), (REFUSED.format(key=key, namespace=pod.namespace),)
    chosen: list[str] = []
    warnings: list[str] = []
    for entry in entries:
        if not cdi.is_qualified_name(entry):
            warnings.append(INVALID.format(key=key, name=entry))
        elif entry not in chosen:
            chosen.append(entry)
    return tuple(chosen), tuple(warnings)


def attach(cdi_names: tuple[str, ...], view: NodeView, draft: Draft) -> None:
    for name in cdi_names:
        if not cdi.deliver(draft, view, name):
            draft.warn(NO_EDITS.format(name=name))
