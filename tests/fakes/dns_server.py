"""A local DNS server (UDP, in a thread) answering TXT queries from a table, with dnspython's own wire format:
domain verification's lookup goes through a real resolver to it (settings.SSO_DNS_NAMESERVERS)."""

from __future__ import annotations

import socket
import threading

import dns.message
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset


class FakeDns:
    def __init__(self) -> None:
        self.txt: dict[str, list[str]] = {}
        self.queries: list[str] = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self._stop = False

    def start(self) -> FakeDns:
        threading.Thread(target=self._serve, daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop = True
        self.sock.close()

    def _serve(self) -> None:
        while not self._stop:
            try:
                data, peer = self.sock.recvfrom(4096)
            except OSError:
                return
            query = dns.message.from_wire(data)
            response = dns.message.make_response(query)
            question = query.question[0]
            name = question.name.to_text().rstrip(".").lower()
            self.queries.append(name)
            values = self.txt.get(name)
            if question.rdtype == dns.rdatatype.TXT and values:
                response.answer.append(dns.rrset.from_text_list(
                    question.name, 60, dns.rdataclass.IN, dns.rdatatype.TXT, [f'"{v}"' for v in values]))
            else:
                response.set_rcode(dns.rcode.NXDOMAIN)
            self.sock.sendto(response.to_wire(), peer)
