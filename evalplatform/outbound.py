"""HTTP requests to addresses users typed (webhooks), made safe against server-side request forgery.

A URL a user gives makes our server connect where the user points it: without a check, a webhook to
`http://169.254.169.254/` reads the cloud's metadata service and one to `http://localhost:6379/` talks to
Redis. So every such URL goes through one check, the same for the form, the API and the sender:

- only http and https, a host, and no userinfo (`user:pass@` hides the real host from a quick read);
- the host, an IP literal in any spelling inet_aton reads (`2130706433`, `0x7f.1`, `017700000001`,
  `127.1`) or a name, is resolved with getaddrinfo and *every* address it gives must be public: not
  loopback, private, link-local, shared (CGNAT), multicast, reserved or unspecified, nor an IPv6 form
  that carries such an IPv4 address (IPv4-mapped, 6to4, Teredo). `allowed` networks (the operator's
  WEBHOOK_ALLOWED_NETWORKS: an internal range, or the loopback listeners of the tests) are let through.

The sender resolves again when it sends and connects to the very address it checked (the connection is
pinned to it, with the name kept for the Host header and TLS's SNI and certificate check), so a name that
resolves elsewhere between the check and the connection (DNS rebinding) cannot get through. Redirects are
never followed: an answer is an answer, a 3xx included. The whole request, from resolving to the status
line, the headers and the part of the body that is read, has one deadline: a receiver that trickles a byte
at a time is cut there, where a per-read timeout would wait for ever.

Framework-free: the caller passes the allowed networks and the deadline (`monitoring.alerts.notifications`
reads them from the settings; so does the LLM judge's client, `annotations.machine_judges.llm_client`, which
also sends its own headers and reads a whole answer up to `body_limit` bytes).
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

#: Bytes of the body an answer may carry that are read (to say what the receiver answered).
ANSWER_BYTES = 300


class OutboundRefused(ValueError):
    """The URL may not be requested: its form, or an address its host resolves to. Not worth a retry."""


class OutboundFailed(OSError):
    """The request was made but did not get an answer: unreachable, refused, reset. Worth a retry."""


class OutboundTimeout(OutboundFailed):
    """No whole answer (status line and headers) came before the deadline."""


@dataclass(frozen=True)
class OutboundURL:
    """A URL that passed the form check: where to connect (host, port) and what to ask for (`target`)."""

    scheme: str
    host: str
    port: int
    target: str

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"


@dataclass(frozen=True)
class Answer:
    """What the receiver answered: its status, reason, Location (for a 3xx), the start of its body (or as
    much as `body_limit` asked for) and its Retry-After header (for a 429 or 503), if any."""

    status: int
    reason: str
    location: str
    body: str
    retry_after: str = ""


def networks_parse(entries: Iterable[str]) -> tuple[IPNetwork, ...]:
    """CIDRs (`10.20.0.0/16`, `127.0.0.0/8`, `fd00::/8`); a bad one raises ValueError naming it."""
    parsed = []
    for entry in entries:
        try:
            parsed.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError as error:
            raise ValueError(
                f"{entry!r} is not a network (write a CIDR such as 10.0.0.0/8): {error}"
            ) from None
    return tuple(parsed)


def url_parse(url: str) -> OutboundURL:
    """The URL's parts, or OutboundRefused saying what is wrong with its form."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as error:
        raise OutboundRefused(f"{url!r} is not a valid URL: {error}.") from None
    if parts.scheme not in ("http", "https"):
        raise OutboundRefused("Only http and https URLs are allowed.")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise OutboundRefused("The URL may not carry a user name or password (user:pass@host).")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise OutboundRefused("The URL has no host.")
    try:
        host.encode("idna")
    except UnicodeError:
        raise OutboundRefused(f"{host!r} is not a valid host name.") from None
    if any(character.isspace() or character in "\\%" for character in host):
        raise OutboundRefused(f"{host!r} is not a valid host name.")
    literal = _literal_address(host)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return OutboundURL(
        scheme=parts.scheme,
        host=str(literal) if literal is not None else host,
        port=port or (443 if parts.scheme == "https" else 80),
        target=target,
    )


def _literal_address(host: str) -> IPAddress | None:
    """The address a host names by itself, in any spelling the resolver would read (`2130706433`, `0x7f.1`,
    `017700000001`, `127.1`, `::ffff:127.0.0.1`): such a host is checked even where nothing resolves."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if all(character in "0123456789abcdefxABCDEFX." for character in host) and host[0].isdigit():
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


#: What an address that is refused is, tested in this order (the first that holds names it).
_REFUSED_KINDS = (
    ("a loopback", "is_loopback"),
    ("the unspecified", "is_unspecified"),
    ("a link-local", "is_link_local"),
    ("a multicast", "is_multicast"),
    ("a private", "is_private"),
    ("a reserved", "is_reserved"),
)


def address_refusal(address: IPAddress, *, allowed: Sequence[IPNetwork] = ()) -> str | None:
    """What makes `address` refused ("a loopback address"), or None: it is public, or in an allowed network."""
    embedded = _embedded_ipv4(address)
    if any(address in network or (embedded is not None and embedded in network) for network in allowed):
        return None
    for candidate in (embedded, address):  # the IPv4 address an IPv6 one carries says most
        if candidate is None:
            continue
        carried = f" (it carries {candidate})" if candidate is embedded else ""
        for phrase, flag in _REFUSED_KINDS:
            if getattr(candidate, flag):
                return f"{phrase} address{carried}"
        if not candidate.is_global:
            return f"not a public address{carried}"
    return None


def _embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (IPv4-mapped, 6to4, Teredo's client), if any."""
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return None


def addresses_resolve(
    url: OutboundURL, *, allowed: Sequence[IPNetwork] = (), timeout: float | None = None
) -> list[tuple[IPAddress, tuple[object, ...], int]]:
    """Every address the URL's host resolves to, as (address, socket address, family), each one checked:
    OutboundRefused if any is refused (a name with one public and one private address is refused);
    OutboundFailed if the name does not resolve (within `timeout` seconds, when given)."""
    answers = _getaddrinfo(url.host, url.port, timeout=timeout)
    found = []
    for family, _, _, _, sockaddr in answers:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%")[0])
        reason = address_refusal(address, allowed=allowed)
        if reason:
            said = f"{url.host} is" if url.host == str(address) else f"{url.host} resolves to {address},"
            raise OutboundRefused(f"{said} {reason}: refused.")
        found.append((address, tuple(sockaddr), family))
    if not found:
        raise OutboundFailed(f"{url.host} resolves to no address.")
    return found


def _getaddrinfo(host: str, port: int, *, timeout: float | None) -> list[tuple]:  # type: ignore[type-arg]
    """getaddrinfo, given up after `timeout` seconds (the lookup itself has no timeout to pass)."""
    result: list[object] = []

    def lookup() -> None:
        try:
            result.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP))
        except (OSError, UnicodeError) as error:
            result.append(error)

    if timeout is None:
        lookup()
    else:
        worker = threading.Thread(target=lookup, name=f"resolve-{host}", daemon=True)
        worker.start()
        worker.join(max(0.0, timeout))
    if not result:
        raise OutboundTimeout(f"resolving {host} took longer than the deadline.")
    if isinstance(result[0], BaseException):
        raise OutboundFailed(f"{host} does not resolve: {result[0]}")
    return result[0]  # type: ignore[return-value]


def url_check(url: str, *, allowed: Sequence[IPNetwork] = ()) -> OutboundURL:
    """The check when a URL is saved (the form and the API): its form, and every address its host resolves
    to now. A name that does not resolve from here is accepted (the sender checks again when it sends)."""
    parsed = url_parse(url)
    literal = _literal_address(parsed.host)
    if literal is not None:
        reason = address_refusal(literal, allowed=allowed)
        if reason:
            raise OutboundRefused(f"{parsed.host} is {reason}: refused.")
        return parsed
    with contextlib.suppress(OutboundFailed):
        addresses_resolve(parsed, allowed=allowed, timeout=5.0)
    return parsed


def post(
    url: str,
    body: bytes,
    *,
    content_type: str = "application/json",
    allowed: Sequence[IPNetwork] = (),
    timeout: float = 10.0,
    user_agent: str = "evalplatform",
    headers: Mapping[str, str] | None = None,
    body_limit: int = ANSWER_BYTES,
) -> Answer:
    """POST `body` to `url`, with the checks of the module docstring, within `timeout` seconds in all.

    `headers` are sent besides the fixed ones (an Authorization, say); `body_limit` is how many bytes of
    the answer's body are read, within the same deadline (a body cut by the deadline raises OutboundTimeout
    when more than ANSWER_BYTES were asked for: the caller wants the whole answer).

    Raises OutboundRefused (the URL or an address is refused: do not retry), OutboundTimeout (no whole
    answer by the deadline) or OutboundFailed (no answer: unreachable, refused, reset). Any answer is
    returned as it is, a 3xx included (never followed).
    """
    deadline = time.monotonic() + timeout
    parsed = url_parse(url)
    addresses = addresses_resolve(parsed, allowed=allowed, timeout=timeout)
    failures = []
    for address, sockaddr, family in addresses:
        if time.monotonic() >= deadline:
            break
        try:
            sent = _Sent(body, content_type, user_agent, dict(headers or {}), body_limit)
            return _post_to(parsed, address, sockaddr, family, sent, deadline)
        except OutboundTimeout:
            raise
        except OutboundFailed as error:
            failures.append(str(error))
    if time.monotonic() >= deadline:
        raise OutboundTimeout(f"no answer from {parsed.host} within {timeout:g} s")
    raise OutboundFailed("; ".join(failures))


@dataclass(frozen=True)
class _Sent:
    """What one POST sends, and how much of the answer's body it reads."""

    body: bytes
    content_type: str
    user_agent: str
    headers: dict[str, str]
    body_limit: int


def _post_to(
    url: OutboundURL,
    address: IPAddress,
    sockaddr: tuple[object, ...],
    family: int,
    sent: _Sent,
    deadline: float,
) -> Answer:
    """One request on a connection to `sockaddr`, the address that was checked, cut at `deadline`."""
    remaining = deadline - time.monotonic()
    connection = _pinned_connection(url, sockaddr, family, timeout=remaining)
    watchdog = _Watchdog(connection, remaining)
    watchdog.start()
    try:
        connection.putrequest("POST", url.target, skip_host=True, skip_accept_encoding=True)
        for name, value in (
            ("Host", url.host_header),
            ("Content-Type", sent.content_type),
            ("Content-Length", str(len(sent.body))),
            ("User-Agent", sent.user_agent),
            ("Connection", "close"),
            *sent.headers.items(),
        ):
            connection.putheader(name, value)
        connection.endheaders(sent.body)
        watchdog.sock = connection.sock  # getresponse() hands the socket to the response: keep it to cut
        response = connection.getresponse()
        if watchdog.fired:  # the socket was shut while the headers came: what was parsed may be cut short
            raise TimeoutError
    except (OSError, http.client.HTTPException) as error:
        if watchdog.fired or isinstance(error, TimeoutError):
            raise OutboundTimeout(
                f"no whole answer from {url.host} ({address}) within the deadline"
            ) from None
        raise OutboundFailed(f"{url.host} ({address}): {error or type(error).__name__}") from None
    else:
        text = _start_of_body(response, sent.body_limit)
        if watchdog.fired and sent.body_limit > ANSWER_BYTES:
            raise OutboundTimeout(f"the answer from {url.host} ({address}) was cut by the deadline")
        return Answer(
            status=response.status,
            reason=response.reason,
            location=response.getheader("Location") or "",
            body=text,
            retry_after=response.getheader("Retry-After") or "",
        )
    finally:
        watchdog.cancel()
        connection.close()


def _start_of_body(response: http.client.HTTPResponse, limit: int = ANSWER_BYTES) -> str:
    """The first bytes of the body, as far as they came before the deadline: the status is the answer."""
    try:
        return response.read(limit).decode("utf-8", "replace")
    except (OSError, http.client.HTTPException):
        return ""


def _pinned_connection(
    url: OutboundURL, sockaddr: tuple[object, ...], family: int, *, timeout: float
) -> http.client.HTTPConnection:
    """A connection that names `url.host` (Host header, SNI, certificate) and connects to `sockaddr` only."""
    connection: http.client.HTTPConnection
    if url.scheme == "https":
        connection = http.client.HTTPSConnection(
            url.host, url.port, timeout=timeout, context=ssl.create_default_context()
        )
    else:
        connection = http.client.HTTPConnection(url.host, url.port, timeout=timeout)

    def connect_to_checked(_: object, timeout: float | None = None, source: object = None) -> socket.socket:
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.settimeout(timeout)
            sock.connect(sockaddr)
        except BaseException:
            sock.close()
            raise
        return sock

    connection._create_connection = connect_to_checked  # type: ignore[attr-defined]
    return connection


class _Watchdog(threading.Thread):
    """Shuts the connection's socket down at the deadline: every blocked read or write then returns, however
    slowly the receiver trickles (a socket timeout bounds each read, not their sum)."""

    def __init__(self, connection: http.client.HTTPConnection, seconds: float) -> None:
        super().__init__(name="outbound-deadline", daemon=True)
        self.connection = connection
        self.seconds = seconds
        self.fired = False
        #: The connected socket, once the request is sent (the connection forgets it when the answer says
        #: Connection: close, and the body is then read from it through the response).
        self.sock: socket.socket | None = None
        self._cancelled = threading.Event()

    def run(self) -> None:
        if self._cancelled.wait(max(0.0, self.seconds)):
            return
        self.fired = True
        while not self._cancelled.is_set():  # until connect() has made the socket, if it has not yet
            sock = self.sock or self.connection.sock
            if sock is not None:
                # The plain socket's shutdown, also under TLS: it wakes the reader and leaves TLS state alone.
                with contextlib.suppress(OSError):
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)
                return
            self._cancelled.wait(0.05)

    def cancel(self) -> None:
        self._cancelled.set()
