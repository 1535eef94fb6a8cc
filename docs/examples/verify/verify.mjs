// Check a waitroom entry pass offline, with Node's own crypto (no
// packages), against the waitroom's published keys
// (/.well-known/jwks.json). Node 18 or later (fetch, Ed25519 JWK keys).
//
//   node verify.mjs https://waitroom.example/.well-known/jwks.json \
//       https://waitroom.example default < pass.txt
//
// reads the pass on stdin (never on the command line, where other users of
// the machine can read it), prints its claims as JSON and exits 0, or says
// why it is refused on stderr and exits 1. An order page imports
// verifyPass and keeps the keys it fetched (fetching again for a kid it
// does not know, at most every 30 s).
import { createPublicKey, verify } from "node:crypto";
import { pathToFileURL } from "node:url";

const part = /^[A-Za-z0-9_-]+$/; // base64url, one spelling
const decode = (s) => Buffer.from(s, "base64url");

// verifyPass returns the claims of a valid pass for queue, or throws.
// The algorithm is pinned to EdDSA, so a token that names another (HS256
// keyed with the public key, "none") is refused before any key is used;
// the issuer and the audience (the queue) must match, exp and nbf hold.
export async function verifyPass(token, { keys, issuer, queue, now = Date.now() }) {
  const parts = token.split(".");
  if (parts.length !== 3 || !parts.every((p) => part.test(p))) throw new Error("not a JWS in compact form");
  const [h, p, s] = parts;
  const header = JSON.parse(decode(h));
  if (header.alg !== "EdDSA") throw new Error(`alg ${header.alg}: only EdDSA is accepted`);
  const jwk = keys.find((k) => k.kid === header.kid && k.kty === "OKP" && k.crv === "Ed25519");
  if (!jwk) throw new Error(`unknown key ${header.kid}`);
  const key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: jwk.x }, format: "jwk" });
  if (!verify(null, Buffer.from(`${h}.${p}`), key, decode(s))) throw new Error("bad signature");
  const c = JSON.parse(decode(p));
  const t = Math.floor(now / 1000);
  if (c.iss !== issuer) throw new Error("another issuer");
  if (c.aud !== queue) throw new Error("a pass for another queue");
  if (typeof c.exp !== "number" || t >= c.exp) throw new Error("expired");
  if (typeof c.nbf !== "number" || t < c.nbf) throw new Error("not valid yet");
  if (typeof c.sub !== "string" || c.sub === "") throw new Error("no subject");
  return c;
}

// fetchKeys reads a waitroom's JWKS.
export async function fetchKeys(jwksUrl) {
  const res = await fetch(jwksUrl);
  if (!res.ok) throw new Error(`JWKS: ${res.status}`);
  return (await res.json()).keys;
}

async function main() {
  const [jwksUrl, issuer, queue] = process.argv.slice(2);
  if (!queue) {
    console.error("usage: node verify.mjs JWKS_URL ISSUER QUEUE < pass");
    return 2;
  }
  let token = "";
  for await (const chunk of process.stdin) token += chunk;
  let keys;
  try {
    keys = await fetchKeys(jwksUrl);
  } catch (e) {
    console.error(`cannot tell: ${e.message}`); // not a verdict on the pass
    return 2;
  }
  try {
    const c = await verifyPass(token.trim(), { keys, issuer, queue });
    console.log(JSON.stringify({ queue: c.aud, sub: c.sub, exp: c.exp }));
    return 0;
  } catch (e) {
    console.error(`refused: ${e.message}`);
    return 1;
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main();
}
