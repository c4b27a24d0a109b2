"""One canonical form for a host, so the name that is checked is the name that is used.

Published bypasses of host allow-lists come from two readings of one string: the
checker sees ``trusted.com.evil.net`` or ``trusted.com\\x00.evil.net`` and lets it
through, the resolver sees another host; ``http://2130706433/`` or ``0x7f.1`` is
``127.0.0.1`` to the C library but a name to a naive check. Here every host goes
through :func:`canonical_host` before it is matched or resolved:

* NUL, spaces, control characters, ``%``, ``@``, ``/``, ``\\`` and the like are refused;
* case is folded and one trailing dot dropped; an empty label is refused;
* non-ASCII names become IDNA A-labels (UTS #46 mapping: full-width dots and letters
  are what they look like); ``xn--`` labels must decode;
* a name whose last label is a number is an IPv4 address in the WHATWG URL reading
  (decimal, ``0x`` hex or ``0`` octal parts, one to four of them: what ``inet_aton``
  accepts) and becomes its dotted-quad form, or is refused when it is not a valid one;
* IPv6 literals (with or without brackets) become their compressed form; zone ids are
  refused.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

MAX_NAME = 253
MAX_LABEL = 63
# Never in a host: separators of other URL parts, quoting, and whitespace/control.
_FORBIDDEN = frozenset("%@/\\?#<>^|[]\"'`{} ,;=+!$&()*~")
_LABEL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")


class BadHost(ValueError):
    """Not a host ketch will match or connect to (the message says why)."""


@dataclass(frozen=True)
class Host:
    """A canonical host: ``name`` is lowercase ASCII without a trailing dot, or the
    address's canonical text when ``ip`` is set."""

    name: str
    ip: IPAddress | None = None

    def __str__(self) -> str:
        return self.name

    @property
    def authority(self) -> str:
        """As it stands in a URL (IPv6 in brackets)."""
        return f"[{self.name}]" if isinstance(self.ip, ipaddress.IPv6Address) else self.name


def canonical_host(text: str) -> Host:
    """The canonical form of a host name or address; :class:`BadHost` if there is none."""
    if not isinstance(text, str):
        raise BadHost("a host name must be text")
    if not text:
        raise BadHost("an empty host name")
    if len(text) > 1024:
        raise BadHost("a host name longer than 1024 characters")
    for ch in text:
        if ord(ch) < 0x21 or ord(ch) == 0x7F or 0x80 <= ord(ch) < 0xA0:
            raise BadHost(f"{text!r} contains a space or a control character")
    if text.startswith("[") or text.endswith("]"):
        if not (text.startswith("[") and text.endswith("]")):
            raise BadHost(f"{text!r}: unbalanced brackets")
        return _ipv6(text[1:-1], text)
    if ":" in text:
        return _ipv6(text, text)
    name = text
    if not name.isascii():
        name = _idna(name)
    name = name.lower()
    if name.endswith("."):
        name = name[:-1]
    if not name:
        raise BadHost(f"{text!r} is not a host name")
    if any(ch in _FORBIDDEN for ch in name):
        raise BadHost(f"{text!r} contains a character no host name has")
    labels = name.split(".")
    if _ends_in_number(labels):
        return Host(str(ip := _ipv4(labels, text)), ip)
    if len(name) > MAX_NAME:
        raise BadHost(f"{text!r} is longer than {MAX_NAME} characters")
    for label in labels:
        if not label:
            raise BadHost(f"{text!r} has an empty label")
        if len(label) > MAX_LABEL:
            raise BadHost(f"{text!r} has a label longer than {MAX_LABEL} characters")
        if not set(label) <= _LABEL_CHARS or label[0] == "-" or label[-1] == "-":
            raise BadHost(f"{text!r} is not a valid host name")
        if label.startswith("xn--"):
            _check_a_label(label, text)
    return Host(name)


def _idna(name: str) -> str:
    import idna

    try:
        return idna.encode(name, uts46=True, transitional=False).decode("ascii")
    except (idna.IDNAError, UnicodeError) as exc:
        raise BadHost(f"{name!r} is not a valid international host name ({exc})") from None


def _check_a_label(label: str, text: str) -> None:
    import idna

    try:
        idna.decode(label)
    except (idna.IDNAError, UnicodeError):
        raise BadHost(f"{text!r} has an invalid IDNA label {label!r}") from None


def _ipv6(inner: str, text: str) -> Host:
    if "%" in inner:
        raise BadHost(f"{text!r}: IPv6 zone identifiers are not accepted")
    try:
        ip = ipaddress.IPv6Address(inner)
    except ValueError:
        raise BadHost(f"{text!r} is not a valid IPv6 address") from None
    return Host(ip.compressed, ip)


def _number(part: str) -> int | None:
    """One part of an IPv4 literal as the C library reads it (None: not a number)."""
    if part[:2] in ("0x", "0X"):
        digits = part[2:]
        if not digits:
            return 0
        return int(digits, 16) if all(c in "0123456789abcdefABCDEF" for c in digits) else None
    if len(part) > 1 and part[0] == "0":
        return int(part, 8) if all(c in "01234567" for c in part) else None
    return int(part) if part.isdigit() else None


def _ends_in_number(labels: list[str]) -> bool:
    """The WHATWG "ends in a number" test: then the host is an IPv4 address or nothing."""
    last = labels[-1] if labels[-1] or len(labels) == 1 else labels[-2]
    if last.isdigit():
        return True
    return _number(last) is not None and last[:2] in ("0x", "0X")


def _ipv4(labels: list[str], text: str) -> ipaddress.IPv4Address:
    if not labels[-1] and len(labels) > 1:
        labels = labels[:-1]
    if len(labels) > 4 or any(not part for part in labels):
        raise BadHost(f"{text!r} looks like an IPv4 address but is not a valid one")
    numbers = [_number(part) for part in labels]
    if any(n is None for n in numbers):
        raise BadHost(f"{text!r} looks like an IPv4 address but is not a valid one")
    values = [n for n in numbers if n is not None]
    if any(n > 255 for n in values[:-1]) or values[-1] >= 256 ** (5 - len(values)):
        raise BadHost(f"{text!r} looks like an IPv4 address but is out of range")
    value = values[-1]
    for i, n in enumerate(values[:-1]):
        value += n << (8 * (3 - i))
    return ipaddress.IPv4Address(value)


def split_authority(text: str, default_port: int | None = None) -> tuple[Host, int]:
    """``host:port`` (``[v6]:port``) as a canonical host and a port; the port may be
    left out only when ``default_port`` is given."""
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise BadHost(f"{text!r}: unbalanced brackets")
        host_text, rest = text[: end + 1], text[end + 1 :]
        if rest and not rest.startswith(":"):
            raise BadHost(f"{text!r} is not host:port")
        port_text = rest[1:] if rest else ""
    elif text.count(":") > 1:
        raise BadHost(f"{text!r}: an IPv6 address must be in brackets here")
    else:
        host_text, _, port_text = text.partition(":")
        if ":" in text and not port_text:
            raise BadHost(f"{text!r} has an empty port")
    if not port_text:
        if default_port is None:
            raise BadHost(f"{text!r} names no port")
        return canonical_host(host_text), default_port
    if not port_text.isdigit() or len(port_text) > 5 or not 0 < int(port_text) < 65536:
        raise BadHost(f"{text!r} has an invalid port")
    return canonical_host(host_text), int(port_text)
