"""Who may run code on this server: the one setting ``TP_LEARNER_CODE``.

- ``local`` (the default): only a browser on the server's own machine, i.e. a loopback client address AND no
  forwarding header (``X-Forwarded-For``, ``Forwarded``, ``X-Real-IP``): a proxy on the same host makes every visitor
  look local, and a proxy says so in those headers. ``streamlit run app.py`` on a laptop just works.
- ``on``: everyone (a class server whose operator chose it; the README says what it risks).
- ``off``: no one; no process is ever started.
Any other value counts as ``off`` (with a warning in the log).

What the UI passes (no Streamlit here): ``client_host=st.context.ip_address`` and ``headers=st.context.headers``
(read in the session's script run). Streamlit 1.67's ``ip_address`` is the TCP peer of the session's websocket, except
that it reports 127.0.0.1 and ::1 as ``None`` ("accessed through localhost"), so ``None`` counts as loopback; other
loopback addresses (127.0.0.2, ``::ffff:127.0.0.1``) are recognised as such. It is also ``None`` where the server
knows no peer at all (a Unix socket, an ASGI server that gives none): such a deployment sets ``on`` or ``off``.
"""
from __future__ import annotations

import ipaddress
import logging
import os
from collections.abc import Mapping

SETTING = "TP_LEARNER_CODE"
MODES = ("local", "on", "off")
DEFAULT = "local"
FORWARDING_HEADERS = ("x-forwarded-for", "forwarded", "x-real-ip", "x-forwarded-host", "x-client-ip")

_log = logging.getLogger(__name__)


def mode(environ: Mapping[str, str] = os.environ) -> str:
    """``local``, ``on`` or ``off``: the setting, read now (an unknown value is ``off``, logged)."""
    value = environ.get(SETTING, DEFAULT).strip().lower() or DEFAULT
    if value not in MODES:
        _log.warning("%s=%r is not one of %s: learner code is off", SETTING, value, "/".join(MODES))
        return "off"
    return value


def is_loopback(client_host: str | None) -> bool:
    """Whether ``client_host`` is this machine (``None``: Streamlit's way of saying 127.0.0.1 or ::1)."""
    if client_host is None:
        return True
    try:
        address = ipaddress.ip_address(client_host.strip().strip("[]").split("%")[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def forwarded(headers: Mapping[str, str]) -> bool:
    """Whether a proxy forwarded this request (any forwarding header present, whatever its value)."""
    return any(name.lower() in FORWARDING_HEADERS for name in headers)


def allowed(client_host: str | None, headers: Mapping[str, str], environ: Mapping[str, str] = os.environ) -> bool:
    """Whether this client may run code here (see the module docstring)."""
    current = mode(environ)
    if current == "on":
        return True
    if current == "local":
        return is_loopback(client_host) and not forwarded(headers)
    return False
