-- SHA-256 in Redis Lua 5.1 with its bit library, to measure what a draw
-- key made in Lua would cost (docs/perf-log/draw.md): EVAL it with 0 keys,
-- ARGV[1] how many hashes, ARGV[2] a member id; returns SHA-256("abc")
-- (a check) and the last hash.
local band, bor, bxor, bnot, rshift, lshift, ror = bit.band, bit.bor, bit.bxor, bit.bnot, bit.rshift, bit.lshift, bit.ror
local K = {
0x428a2f98,0x71374491,0xb5c0fbcf,0xe9b5dba5,0x3956c25b,0x59f111f1,0x923f82a4,0xab1c5ed5,
0xd807aa98,0x12835b01,0x243185be,0x550c7dc3,0x72be5d74,0x80deb1fe,0x9bdc06a7,0xc19bf174,
0xe49b69c1,0xefbe4786,0x0fc19dc6,0x240ca1cc,0x2de92c6f,0x4a7484aa,0x5cb0a9dc,0x76f988da,
0x983e5152,0xa831c66d,0xb00327c8,0xbf597fc7,0xc6e00bf3,0xd5a79147,0x06ca6351,0x14292967,
0x27b70a85,0x2e1b2138,0x4d2c6dfc,0x53380d13,0x650a7354,0x766a0abb,0x81c2c92e,0x92722c85,
0xa2bfe8a1,0xa81a664b,0xc24b8b70,0xc76c51a3,0xd192e819,0xd6990624,0xf40e3585,0x106aa070,
0x19a4c116,0x1e376c08,0x2748774c,0x34b0bcb5,0x391c0cb3,0x4ed8aa4a,0x5b9cca4f,0x682e6ff3,
0x748f82ee,0x78a5636f,0x84c87814,0x8cc70208,0x90befffa,0xa4506ceb,0xbef9a3f7,0xc67178f2}
local function block(H, msg, i)
  local w = {}
  for j = 0, 15 do
    local a, b, c, d = string.byte(msg, i + 4*j, i + 4*j + 3)
    w[j] = bor(lshift(a, 24), lshift(b, 16), lshift(c, 8), d)
  end
  for j = 16, 63 do
    local v15, v2 = w[j-15], w[j-2]
    local s0 = bxor(ror(v15, 7), ror(v15, 18), rshift(v15, 3))
    local s1 = bxor(ror(v2, 17), ror(v2, 19), rshift(v2, 10))
    w[j] = bit.tobit(w[j-16] + s0 + w[j-7] + s1)
  end
  local a,b,c,d,e,f,g,h = H[1],H[2],H[3],H[4],H[5],H[6],H[7],H[8]
  for j = 0, 63 do
    local S1 = bxor(ror(e, 6), ror(e, 11), ror(e, 25))
    local ch = bxor(band(e, f), band(bnot(e), g))
    local t1 = h + S1 + ch + K[j+1] + w[j]
    local S0 = bxor(ror(a, 2), ror(a, 13), ror(a, 22))
    local maj = bxor(band(a, b), band(a, c), band(b, c))
    local t2 = S0 + maj
    h = g; g = f; f = e; e = bit.tobit(d + t1); d = c; c = b; b = a; a = bit.tobit(t1 + t2)
  end
  H[1]=bit.tobit(H[1]+a); H[2]=bit.tobit(H[2]+b); H[3]=bit.tobit(H[3]+c); H[4]=bit.tobit(H[4]+d)
  H[5]=bit.tobit(H[5]+e); H[6]=bit.tobit(H[6]+f); H[7]=bit.tobit(H[7]+g); H[8]=bit.tobit(H[8]+h)
end
local function sha256(msg)
  local len = #msg
  msg = msg .. '\128' .. string.rep('\0', (55 - len) % 64)
  local bits = len * 8
  msg = msg .. string.char(0,0,0,0, band(rshift(bits,24),255), band(rshift(bits,16),255), band(rshift(bits,8),255), band(bits,255))
  local H = {0x6a09e667,0xbb67ae85,0x3c6ef372,0xa54ff53a,0x510e527f,0x9b05688c,0x1f83d9ab,0x5be0cd19}
  for i = 1, #msg, 64 do block(H, msg, i) end
  local out = {}
  for i = 1, 8 do out[i] = bit.tohex(H[i]) end
  return table.concat(out)
end
local n = tonumber(ARGV[1])
local r
for i = 1, n do r = sha256(ARGV[2] .. i) end
return {sha256('abc'), r}
