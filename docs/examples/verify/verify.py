#!/usr/bin/env python3
"""Check a waitroom entry pass offline, with PyJWT, against the waitroom's
published keys (/.well-known/jwks.json). Debian: apt install python3-jwt
python3-cryptography (PyJWT needs cryptography for EdDSA).

    python3 verify.py https://waitroom.example/.well-known/jwks.json \\
        https://waitroom.example default < pass.txt

reads the pass on stdin (never on the command line, where other users of
the machine can read it), prints its claims as JSON and exits 0, or says
why it is refused on stderr and exits 1. An order page calls verify()
with one PyJWKClient it keeps (it caches the keys and fetches them again
for a kid it does not know).
"""
import json
import sys

import jwt


def verify(token, jwks, issuer, queue):
    """Return the claims of a valid pass for queue, or raise jwt.PyJWTError.

    The algorithm is pinned to EdDSA, so a token that names another (HS256
    keyed with the public key, "none") is refused before any key is used;
    the issuer and the audience (the queue) must match, exp and nbf hold.
    """
    key = jwks.get_signing_key_from_jwt(token).key
    return jwt.decode(
        token,
        key,
        algorithms=["EdDSA"],
        issuer=issuer,
        audience=queue,
        options={"require": ["iss", "sub", "aud", "exp", "nbf"]},
    )


def main():
    if len(sys.argv) != 4:
        print("usage: verify.py JWKS_URL ISSUER QUEUE < pass", file=sys.stderr)
        return 2
    jwks_url, issuer, queue = sys.argv[1:]
    jwks = jwt.PyJWKClient(jwks_url)
    try:
        claims = verify(sys.stdin.read().strip(), jwks, issuer, queue)
    except jwt.PyJWTError as e:
        print("refused: %s" % e, file=sys.stderr)
        return 1
    print(json.dumps({"queue": claims["aud"], "sub": claims["sub"], "exp": claims["exp"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
