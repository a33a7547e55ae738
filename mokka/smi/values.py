"""One GPU dict → the strings nvidia-smi prints. Pure; shared by every renderer."""

from __future__ import annotations

from mokka.core import names

MIB = 1024 * 1024
NA = "N/A"
#: Architectures before Ada: absolute temperature thresholds instead of T.Limit ones.
PRE_ADA = ("kepler", "maxwell", "pascal", "volta", "turing", "ampere")
ARCH_NAMES = {"ada_lovelace": "Ada Lovelace", "ada": "Ada Lovelace"}
BRANDS = {"nvidia": "NVIDIA", "tesla": "Tesla", "quadro": "Quadro", "geforce": "GeForce",
          "titan": "Titan", "nvidia_rtx": "NVIDIA RTX"}


def get(gpu: dict, path: str, default=None):
    node = gpu
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def is_na(value) -> bool:
    return value is None or (isinstance(value, str) and value.strip().upper() in ("", "N/A", "NA"))


def word(value, default: str = NA) -> str:
    """``enabled`` → ``Enabled``; booleans → Enabled/Disabled; N/A stays."""
    if isinstance(value, bool):
        return "Enabled" if value else "Disabled"
    if is_na(value):
        return default
    text = str(value)
    return text[:1].upper() + text[1:] if text.islower() else text


def title(value, default: str = NA) -> str:
    """``all_on`` → ``All On``; ``switch_connected`` → ``Switch Connected``."""
    if is_na(value):
        return default
    return " ".join(w[:1].upper() + w[1:] for w in str(value).replace("_", " ").split())


def yes_no(value) -> str:
    return NA if value is None else ("Yes" if value else "No")


def unit(value, suffix: str) -> str:
    return NA if is_na(value) else f"{value} {suffix}"


def mib(value) -> int | None:
    return None if is_na(value) else int(value) // MIB


def watts_number(mw) -> str | None:
    """Milliwatts as nvidia-smi prints watts: NVIDIA's formats a C float, so the
    value goes through one (252285 mW prints 252.29, as a double would print 252.28)."""
    if is_na(mw):
        return None
    import struct                      # a builtin module: costs nothing on start-up

    as_float = struct.unpack("f", struct.pack("f", float(mw) / 1000))[0]
    return f"{as_float:.2f}"


def watts(mw) -> str:
    number = watts_number(mw)
    return NA if number is None else f"{number} W"


def architecture(gpu: dict) -> str:
    arch = str(gpu.get("architecture") or "").lower()
    return ARCH_NAMES.get(arch, arch.capitalize() or NA)


def pre_ada(gpu: dict) -> bool:
    return str(gpu.get("architecture") or "").lower() in PRE_ADA


def brand(gpu: dict) -> str:
    b = str(gpu.get("brand") or "")
    return BRANDS.get(b.lower(), b or NA)


def compute_mode(gpu: dict) -> str:
    mode = str(gpu.get("compute_mode") or "default").lower()
    return {"default": "Default", "exclusive_thread": "Exclusive_Thread",
            "prohibited": "Prohibited", "exclusive_process": "Exclusive_Process"}.get(mode, word(mode))


def memory_mib(gpu: dict) -> dict:
    """total/reserved/used/free in MiB the way nvidia-smi derives them."""
    mem = gpu.get("memory") or {}
    total = mib(mem.get("total_bytes")) or 0
    reserved = mib(mem.get("reserved_bytes")) or 0
    used = mib(mem.get("used_bytes")) or 0
    return {"total": total, "reserved": reserved, "used": used,
            "free": max(total - reserved - used, 0)}


def bar1_mib(gpu: dict) -> dict:
    bar = gpu.get("bar1_memory") or {}
    total = mib(bar.get("total_bytes")) or 0
    used = mib(bar.get("used_bytes")) or 0
    return {"total": total, "used": used, "free": max(total - used, 0)}


def fan(gpu: dict) -> str:
    f = gpu.get("fan") or {}
    speed = f.get("speed_percent")
    if not f.get("count") or is_na(speed):
        return NA
    return f"{speed} %"


def persistence(gpu: dict) -> str:
    return word(gpu.get("persistence_mode"), "Disabled")


def mig_mode(gpu: dict, key: str = "mode_current") -> str:
    mig = gpu.get("mig") or {}
    if not mig.get("max_gpu_instances"):
        return NA
    return word(mig.get(key), "Disabled")


def ecc_mode(gpu: dict, key: str = "mode_current") -> str:
    return word(get(gpu, f"ecc.{key}"))


def ecc_count(gpu: dict, scope: str, kind: str, where: str = "device_memory"):
    """kind ``single_bit`` (corrected) or ``double_bit`` (uncorrected)."""
    if ecc_mode(gpu) != "Enabled":
        return None
    return get(gpu, f"ecc.errors.{scope}.{kind}.{where}")


def processes(gpu: dict) -> list:
    """Configured processes; never a phantom row (pid 0 or empty)."""
    out = []
    for p in gpu.get("processes") or []:
        if isinstance(p, dict) and p.get("pid"):
            out.append(p)
    return out


# --- fabric -----------------------------------------------------------------------

def fabric_state(gpu: dict) -> str:
    """Lower-case state name; ``not_supported`` without a fabric block."""
    fabric = gpu.get("fabric")
    if not fabric:
        return "not_supported"
    return str(fabric.get("state") or names.FABRIC_STATE_DEFAULT).lower()


def fabric_health(gpu: dict) -> dict:
    """Summary, bandwidth and flags in nvidia-smi words."""
    fabric = gpu.get("fabric") or {}
    health = fabric.get("health") or {}
    degraded = bool(health.get("degraded_bandwidth"))
    recovery = bool(health.get("route_recovery"))
    unhealthy = bool(health.get("route_unhealthy"))
    timeout = bool(health.get("access_timeout_recovery"))
    incorrect = health.get("incorrect_configuration")
    incorrect_text = "None" if is_na(incorrect) or str(incorrect).lower() == "none" else title(incorrect)
    summary = str(fabric.get("health_summary") or "auto").lower()
    if summary in ("", "auto"):
        if unhealthy or incorrect_text != "None":
            summary = "unhealthy"
        elif degraded or recovery or timeout:
            summary = "limited_capacity"
        else:
            summary = "healthy"
    return {"summary": title(summary), "bandwidth": "Degraded" if degraded else "Full",
            "route_recovery_in_progress": str(recovery), "route_unhealthy": str(unhealthy),
            "access_timeout_recovery": str(timeout), "incorrect_configuration": incorrect_text}
