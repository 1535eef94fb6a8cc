-- enter.lua: put users into the queue, one after the other in the order
-- given (the order in which they reached this replica). A user is admitted
-- at once only while tokens remain and nobody is waiting (so a missing token
-- key can never let a newcomer jump the line); otherwise the user joins the
-- tail with the next arrival number from Redis. Re-entry always goes to the
-- back: an admission is given up, and a place in the line is replaced by the
-- new arrival number (ZADD updates the score of a member already there).
--
-- Before any of that, each call passes the defences or is refused without
-- changing anything for its user: the rate limits per client address and
-- per place (LIMITED), the queue's proof of work (CHALLENGE), and the cap
-- on the line for a newcomer (FULL). They live in this script so that they
-- cost no round trip of their own.
--
-- Taking many users per call spreads the script's fixed cost (clock,
-- config, bucket) over all of them, and each step below is one command for
-- the whole call, not one per user; each call is still atomic. Positions
-- are the places once the whole call is done: a user given twice in one
-- call ends where the later entry puts them, and if both entries queue,
-- both answers give that one place.
--
-- KEYS[1] -> waiting (ZSET member=user, score=arrival seq)
-- KEYS[2] -> entered (ZSET member=user, score=admission time ms)
-- KEYS[3] -> tokens  (STRING, unset means a full bucket)
-- KEYS[4] -> seq     (STRING arrival counter)
-- KEYS[5] -> config  (HASH)
-- KEYS[6] -> tick    (HASH; field "direct" counts admissions since the last tick)
-- KEYS[7] -> heard   (ZSET member=user, score=when last heard; for abandonment)
-- KEYS[8] -> draw    (SET of a scheduled opening's participants, see tick.lua)
-- KEYS[9] -> admitted (HASH: a renewed sliding session's start, renew.lua)
-- KEYS[10] -> events (STREAM: the webhooks' outbox, emit in common_events.lua)
-- KEYS[11] -> gen   (HASH member=user, value=the generation of its place
--              credentials, for places that moved: keep_current)
-- KEYS[12] -> stale (ZSET member=user, score=the highest arrival number of
--              its credentials that no longer name its place: a re-entry
--              from the line records one less than its new number)
-- KEYS[13] -> arrival rate (HASH w, n, p: arrivals_note, networks.lua)
-- KEYS[14] -> lanes (SET of the lanes that may hold places: a lane's
--              line names itself there as it takes a place)
-- KEYS[15] -> held  (ZSET member=user, score=arrival seq: places set aside
--              at the head, tick.lua; they count in the line's cap and in
--              their networks' price until admitted or dropped)
-- KEYS[16..] -> per call, only the keys it uses, in this order: the
--              client's rate bucket (if its client cost is above 0), its
--              network's and its site's (likewise), the place's rate
--              bucket (if its place cost is above 0), the key that marks
--              its proof of work used (if it brings one), the held ZSETs
--              of the networks it counts (its network, then its site),
--              and for an account's enter the waiting ZSET, held ZSET and
--              draw SET of each other line it names (other_line)
-- ARGV[1..DEFAULTS] -> the replica's defaults queue_config reads
--              (common_config.lua), then the line's lane ("": general)
-- ARGV[DEFAULTS + 1..LIMITS] -> limits per client and per place: period_ms, burst
-- ARGV[LIMITS + 1..LIMITS + 4] -> limits per network and per site: period_ms, burst
-- ARGV[LIMITS + 5..TIERS] -> the price of a place: bits (0: none), calm
--              arrivals a second (0: no pressure), the ceiling a person
--              pays (bits), and whether the human check's provider
--              answers (1 or 0); price.go
-- ARGV[TIERS + 1..] -> per call, two values: user id, and what else it asks,
--              "" for the usual enter (nothing to charge to the shared
--              buckets, no proof of work, no place credential, no
--              network), else "<client cost> <network cost> <site cost>
--              <place cost> <difficulty> <expires> <gen> <counted>
--              <seen 1> <seen 2> <flags>":
--              the calls to charge the client's, its networks' and the
--              place's buckets (0: not asked; see take_all), the
--              difficulty its proof of work meets (0: none), when that
--              proof expires (ms), the generation of the caller's place
--              credential (-1: none; a stale one is answered NOT_WAITING,
--              reason moved, and changes nothing), and how many held
--              ZSETs it brings (0-2): the price of its place is counted
--              on them (none: its networks' first place through this
--              replica, free, seen.go), whether the replica placed
--              someone from each lately (1 or 0), and flags: 1, its network is of the
--              hosting class (every place at the ceiling); 2, it passed a
--              human check (price_need). An account's enter (a join
--              token's) then adds " <lines>" and per other line of the
--              queue "\n<lane> <member>": that line's lane ("": the
--              general lane) and the member id the account has there. An
--              enter without a client so costs one value and
--              no key: a batch's arguments are most of the script's fixed
--              cost (docs/PERFORMANCE.md, "Enter's per-user cost").
-- Returns the head (HEAD_*, common.lua), then a status and place per call,
-- then an arrival number per call:
--         {waiting, until_next_tick_ms, interval_ms, refill_size, ttl_ms, paused,
--          opens_at_ms, prequeue_from_ms, abandon_after_ms, until_open_ms, status1, place1, status2, place2, ...,
--          seq1, seq2, ...}
-- where waiting is the line after the last user (the draw's participants
-- included), until_open_ms the time until a scheduled opening (0: none
-- ahead), and place is the position when WAITING (0 while in a draw), the
-- admission time (ms) when ENTERED, and the time to wait (ms) before
-- trying again when LIMITED or FULL, the difficulty the caller's
-- network must pay now when CHALLENGE (price.go), and 0 when HUMAN (a
-- human check is asked instead). seq is the place's arrival number
-- (its score in the line) when WAITING in the line, else 0: the place
-- credential carries it, so a replica can answer a place far from the
-- head from its snapshot (snapshot.go).
--
-- Only a newcomer within near_head places of the head is recorded as
-- heard: the others are not until they come near (status.lua), so a place
-- far back costs the line's ZSET entry alone.
--
-- Before a scheduled opening (opens_at_ms in the future) nobody enters the
-- line: from prequeue_from_ms everyone joins the draw (the order among them
-- is drawn at the opening), before it everyone is NOT_OPEN.
local FIXED = 15 -- KEYS before the per-call ones
local TIERS = LIMITS + 8 -- ARGV before the per-call ones
local CALLS = (#ARGV - TIERS) / 2
local PRICE_BITS, CALM = tonumber(ARGV[LIMITS + 5]), tonumber(ARGV[LIMITS + 6])
local CEILING, HUMAN_AVAIL = tonumber(ARGV[LIMITS + 7]), ARGV[LIMITS + 8] == '1'
local seqs = {}
local now = now_ms()
-- cfg.budget, what an interval admits (the effective refill while
-- adapting), gives the tokens and the ETA.
local cfg = queue_config(KEYS[5])
local in_draw = redis.call('SCARD', KEYS[8])
local out = reply_head(0, KEYS[6], now, line_rate(KEYS[6], cfg.budget), cfg)
local HEAD = #out

-- arrived counts the places this call made (in the line, in a draw, or
-- admitted at once): the queue's arrivals, whose rate the price feels.
local arrived = 0

-- finish appends each call's arrival number (0: none) to the reply.
local function finish()
  if PRICE_BITS > 0 and CALM > 0 then
    arrivals_note(KEYS[13], now, arrived)
  end
  for i = 1, CALLS do
    out[HEAD + 2 * CALLS + i] = seqs[i] or 0
  end
  return out
end

-- The places' price (networks.lua): the arrival pressure and the line's
-- head, read once and only when a call brings its networks.
local pressure, floor, floor_read = 0, nil, false
local function price_for(held_keys)
  if not floor_read then
    floor, floor_read = held_floor(KEYS[1], KEYS[15], in_draw, cfg.opens_at_ms, now), true
    pressure = arrival_pressure(KEYS[13], now, CALM)
  end
  return price_of(held_keys, floor, PRICE_BITS, pressure)
end

-- next_key returns the next per-call key when the call uses it (n > 0).
local key = FIXED -- the last per-call key taken
local function next_key(n)
  if n > 0 then
    key = key + 1
    return KEYS[key]
  end
end

-- check_limits charges call i's buckets (the costs for its client, its
-- network, its site and its place, the header's order), answering
-- LIMITED when one is over: every call let through the limits counts
-- against them, whatever comes of it. The keys are taken in that order.
local function check_limits(i, c_cost, n_cost, s_cost, p_cost)
  if c_cost + n_cost + s_cost + p_cost == 0 then
    return true -- the usual call: the local stage let it through (local.go)
  end
  local client, network, site, place = next_key(c_cost), next_key(n_cost), next_key(s_cost), next_key(p_cost)
  local wait = take_all({
    {client, ARGV[DEFAULTS + 1], ARGV[DEFAULTS + 2], c_cost},
    {network, ARGV[LIMITS + 1], ARGV[LIMITS + 2], n_cost},
    {site, ARGV[LIMITS + 3], ARGV[LIMITS + 4], s_cost},
    {place, ARGV[DEFAULTS + 3], ARGV[DEFAULTS + 4], p_cost},
  }, now)
  if wait > 0 then
    out[HEAD + 2 * i - 1] = LIMITED
    out[HEAD + 2 * i] = math.ceil(wait)
    return false
  end
  return true
end

-- One account, one place per queue: an account's enter is refused
-- (OTHER_LINE) while the same account holds a place in another of the
-- queue's lines, waiting, set aside at the head, in a draw, or admitted
-- and active (the entered ZSET is the queue's, every line's). A refusal,
-- not a move: arrival numbers are per line, so a place moved to another
-- line could not keep its arrival order. lanes_held is the lanes SET,
-- read once per call of the script and only for an account's enter.
local lanes_held = nil

-- other_line returns the index of the first of others ({lane, member,
-- waiting, held, draw}) that holds member, 0 when a lane of the lanes
-- SET (one that may hold places) is neither this line's nor among
-- others (the caller read the lanes before a change), or nil.
local function other_line(others)
  if not lanes_held then
    lanes_held = redis.call('SMEMBERS', KEYS[14])
  end
  local named = {[LANE] = true}
  for _, o in ipairs(others) do
    named[o.lane] = true
  end
  for _, lane in ipairs(lanes_held) do
    if not named[lane] then
      return 0
    end
  end
  for k, o in ipairs(others) do
    local admitted = tonumber(redis.call('ZSCORE', KEYS[2], o.member))
    if redis.call('ZSCORE', o.waiting, o.member) or redis.call('ZSCORE', o.held, o.member) or
        redis.call('SISMEMBER', o.draw, o.member) == 1 or (admitted and admitted > now - cfg.session_ttl_ms) then
      return k
    end
  end
  return nil
end

-- others_of reads the other lines an account's enter names: their
-- lanes and members from asks' tail, their keys from the call's next
-- keys (nil when it names none).
local function others_of(n, tail)
  if n == 0 then
    return nil
  end
  local others = {}
  for lane, member in string.gmatch(tail, '\n([%w-]*) ([^\n]+)') do
    others[#others + 1] = {lane = lane, member = member, waiting = next_key(1), held = next_key(1), draw = next_key(1)}
  end
  return others
end

-- The defences, per call. users and slot are the calls let through: their
-- user ids and their index among the calls (where their answer goes);
-- proof_key[i] is call i's proof-of-work key, when it brought a proof,
-- and held[i] its networks' held keys, when it brought them.
local users, slot, gens, proof_key, held = {}, {}, {}, {}, {}

-- pass_defences puts each call through the defences (its buckets, then
-- its proof of work), filling users, slot, gens, proof_key and held; a
-- call refused is answered here.
local function pass_defences()
  for i = 1, CALLS do
    local asks = ARGV[TIERS + 2 * i]
    local passed, proved, expires, gen, flags = true, 0, 0, -1, 0
    if asks ~= '' then
      -- One match, no table: this runs for every call of a batch.
      local c_cost, n_cost, s_cost, p_cost, d, e, g, counted, seen1, seen2, f, lines, tail = string.match(asks,
        '^(%d+) (%d+) (%d+) (%d+) (%d+) (%-?%d+) (%-?%d+) (%d) (%d+) (%d+) (%d) ?(%d*)(.*)$')
      proved, expires, gen, flags = tonumber(d), tonumber(e), tonumber(g), tonumber(f)
      passed = check_limits(i, tonumber(c_cost), tonumber(n_cost), tonumber(s_cost), tonumber(p_cost))
      proof_key[i] = next_key(proved)
      if counted ~= '0' then
        held[i] = {{next_key(1), tonumber(seen1)}}
        if counted == '2' then
          held[i][2] = {next_key(1), tonumber(seen2)}
        end
      end
      local others = others_of(tonumber(lines) or 0, tail) -- the lines an account's enter names
      if passed and others then
        local line = other_line(others)
        if line then
          out[HEAD + 2 * i - 1] = OTHER_LINE
          out[HEAD + 2 * i] = line
          passed = false
        end
      end
    end
    if passed then
      -- The queue's own difficulty, or the price of a place on the
      -- caller's network when that is higher, up to the ceiling; or a
      -- human check (price_need).
      local need = price_need(cfg.challenge_difficulty, held[i] and price_for(held[i]), flags % 2 == 1,
        flags >= 2, cfg.human_check, CEILING, HUMAN_AVAIL)
      if need == nil then
        out[HEAD + 2 * i - 1] = HUMAN
        out[HEAD + 2 * i] = 0
      elseif need > 0 and (proved < need or expires <= now or
          not redis.call('SET', proof_key[i], 1, 'NX', 'PX', expires - now)) then
        out[HEAD + 2 * i - 1] = CHALLENGE
        out[HEAD + 2 * i] = need
      else
        users[#users + 1] = ARGV[TIERS + 2 * i - 1]
        slot[#users] = i
        gens[#users] = gen
        if held[i] then
          price_paid(held[i])
        end
      end
    end
  end
end

-- hold records the places just made, users[js[k]] at arrival number
-- seq(k) (0 in a draw), in the held ZSETs of the networks they came
-- from: what the price of those networks' next places counts.
local function hold(js, seq)
  arrived = arrived + #js
  for k, j in ipairs(js) do
    if held[slot[j]] then
      held_add(held[slot[j]], users[j], seq(k))
    end
  end
end

-- answer sets the answer of users[j].
local function answer(j, status, value)
  out[HEAD + 2 * slot[j] - 1] = status
  out[HEAD + 2 * slot[j]] = value
end

-- room_for returns which of the users of list (indices into users) may
-- join a line of `line` people capped at max_waiting: everyone already in
-- it (a re-entry: is_member(names)[k] is true), and newcomers while there
-- is room. The others are answered FULL, with when to try again: the
-- ticks the excess takes from `moves_in` ms (the next tick, or before an
-- opening the opening).
local function room_for(list, line, moves_in, is_member)
  if cfg.max_waiting == 0 or #list == 0 then
    return list
  end
  local names = {}
  for k, j in ipairs(list) do
    names[k] = users[j]
  end
  local member = is_member(names)
  local kept, newcomers = {}, 0
  for k, j in ipairs(list) do
    if member[k] then
      kept[#kept + 1] = j
    elseif line + newcomers < cfg.max_waiting then
      newcomers = newcomers + 1
      kept[#kept + 1] = j
    else
      answer(j, FULL, until_room_ms(line + newcomers, cfg.max_waiting, cfg.budget, cfg.refill_interval_ms, moves_in))
      -- The call changed nothing: its proof of work stays unspent, for
      -- when the line has room.
      if proof_key[slot[j]] then
        redis.call('DEL', proof_key[slot[j]])
      end
    end
  end
  return kept
end

-- join_draw answers every call before a scheduled opening: nobody enters
-- the line; from prequeue_from everyone joins the draw (room_for's cap
-- allowing), before it everyone is NOT_OPEN.
local function join_draw()
  out[HEAD_WAITING] = redis.call('ZCARD', KEYS[1]) + in_draw
  if now < cfg.prequeue_from_ms then
    for j = 1, #users do
      answer(j, NOT_OPEN, 0)
    end
    return
  end
  local all = {}
  for j = 1, #users do
    all[j] = j
  end
  local joining = room_for(all, out[HEAD_WAITING], out[HEAD_UNTIL_OPEN], function(names)
    local in_set = redis.call('SMISMEMBER', KEYS[8], unpack(names))
    for k, v in ipairs(in_set) do
      in_set[k] = v == 1
    end
    return in_set
  end)
  if #joining > 0 then
    local list, heard = {}, {}
    for k, j in ipairs(joining) do
      list[k] = users[j]
      heard[2 * k - 1] = now
      heard[2 * k] = users[j]
      answer(j, WAITING, 0)
    end
    -- Entering again gives up an admission, as ever; in the draw it
    -- changes nothing else (the order is drawn at the opening).
    if redis.call('ZREM', KEYS[2], unpack(list)) > 0 then
      redis.call('HDEL', KEYS[9], unpack(list))
    end
    redis.call('ZREM', KEYS[1], unpack(list))
    redis.call('SADD', KEYS[8], unpack(list))
    redis.call('ZADD', KEYS[7], unpack(heard))
    hold(joining, function() return 0 end)
    out[HEAD_WAITING] = redis.call('ZCARD', KEYS[1]) + redis.call('SCARD', KEYS[8])
  end
end

-- admit_directly lets the first users straight in while tokens remain,
-- if nobody waits (waiting: the line and a draw still being placed), the
-- queue is not paused and the cap on active users leaves room. Returns
-- how many it admitted.
local function admit_directly(waiting)
  local tokens = tonumber(redis.call('GET', KEYS[3])) or cfg.budget
  if tokens > cfg.budget then
    tokens = cfg.budget -- refill_size was lowered since the last tick
  end
  local direct = 0
  if waiting == 0 and cfg.paused == 0 then
    direct = math.min(tokens, #users)
    if cfg.max_active > 0 and direct > 0 then
      direct = math.min(direct, math.max(0, cfg.max_active - active_count(KEYS[2], now, cfg.session_ttl_ms)))
    end
  end
  if direct == 0 then
    return 0
  end
  local args, list = {}, {}
  for j = 1, direct do
    args[2 * j - 1] = now
    args[2 * j] = users[j]
    list[j] = users[j]
    answer(j, ENTERED, now)
  end
  -- ZADD counts new members only: fewer means someone held an admission,
  -- now replaced by this one, whose start is its score.
  if redis.call('ZADD', KEYS[2], unpack(args)) < direct then
    redis.call('HDEL', KEYS[9], unpack(list))
  end
  redis.call('SET', KEYS[3], tokens - direct)
  redis.call('HINCRBY', KEYS[6], 'direct', direct)
  arrived = arrived + direct
  emit(KEYS[10], KEYS[5], 'admitted', list, now)
  return direct
end

-- answer_batch answers the usual batch: every user of rest new to the
-- line (so each given once), in the order given behind the before
-- already there, at arrival numbers first + k. Returns the heard marks
-- of those within near of the head.
local function answer_batch(rest, before, first, near)
  local heard = {}
  for k = 1, #rest do
    local s = slot[rest[k]]
    out[HEAD + 2 * s - 1] = WAITING
    out[HEAD + 2 * s] = before + k
    seqs[s] = first + k
    if before + k <= near then
      heard[#heard + 1] = now
      heard[#heard + 1] = users[rest[k]]
    end
  end
  return heard
end

-- answer_repeats answers a call in which some users were given twice or
-- were in the line already. These users are now the last of the line
-- (waiting long), in the order given; walking back from the end, each
-- distinct user is one place further forward, at the arrival number of
-- its last entry in this call. Returns the heard marks of those within
-- near of the head.
local function answer_repeats(rest, waiting, first, near)
  local place, seq_of, behind = {}, {}, 0
  for k = #rest, 1, -1 do
    local user = users[rest[k]]
    if not place[user] then
      place[user] = waiting - behind
      seq_of[user] = first + k
      behind = behind + 1
    end
    answer(rest[k], WAITING, place[user])
    seqs[slot[rest[k]]] = seq_of[user]
  end
  -- Some went to the back from a place in the line: their older
  -- credentials no longer name it (snapshot.lua).
  local stale = {}
  for user, seq in pairs(seq_of) do
    stale[#stale + 1] = seq - 1
    stale[#stale + 1] = user
  end
  redis.call('ZADD', KEYS[12], 'GT', unpack(stale))
  -- Heard from now: those near the head only.
  local heard = {}
  for user, p in pairs(place) do
    if p <= near then
      heard[#heard + 1] = now
      heard[#heard + 1] = user
    end
  end
  return heard
end

-- join_line puts the users after the first direct at the tail in the
-- order given, each with its own arrival number, giving up any admission
-- they held; newcomers only while the line's cap leaves room. Returns the
-- line's length after them.
local function join_line(direct, waiting)
  local rest = {}
  for j = direct + 1, #users do
    rest[#rest + 1] = j
  end
  -- Places set aside at the head are still the line's, in its cap.
  local held_now = 0
  if cfg.max_waiting > 0 then
    held_now = redis.call('ZCARD', KEYS[15])
  end
  rest = room_for(rest, waiting + held_now, out[HEAD_UNTIL_NEXT_TICK], function(names)
    local scores = redis.call('ZMSCORE', KEYS[1], unpack(names))
    local member = {}
    for k = 1, #names do
      member[k] = scores[k] ~= false
    end
    return member
  end)
  if #rest == 0 then
    return waiting
  end
  local list, args = {}, {}
  local first = redis.call('INCRBY', KEYS[4], #rest) - #rest
  for k, j in ipairs(rest) do
    list[k] = users[j]
    args[2 * k - 1] = first + k
    args[2 * k] = users[j]
  end
  if redis.call('ZREM', KEYS[2], unpack(list)) > 0 then
    redis.call('HDEL', KEYS[9], unpack(list))
  end
  -- ZADD counts newcomers only: a user already waiting moves to the back.
  local before, added = waiting, redis.call('ZADD', KEYS[1], unpack(args))
  hold(rest, function(k) return first + k end)
  waiting = waiting + added
  local near, heard = near_head(cfg.budget, cfg), nil
  if added == #rest then
    heard = answer_batch(rest, before, first, near)
  else
    heard = answer_repeats(rest, waiting, first, near)
  end
  if #heard > 0 then
    redis.call('ZADD', KEYS[7], unpack(heard))
  end
  return waiting
end

-- The body: each step one call, in order.
if LANE ~= '' then
  redis.call('SADD', KEYS[14], LANE)                                -- a lane's line may hold places
end
pass_defences()                                                     -- the defences
users, slot = keep_current(KEYS[11], users, slot, gens, out, HEAD)  -- moved places' old credentials
if cfg.opens_at_ms > now then
  join_draw()                                                       -- before an opening: the draw
  return finish()
end
-- An opening's draw still being placed in the line (tick.lua) counts as
-- people waiting: they are ahead of everyone who arrives now.
local waiting = redis.call('ZCARD', KEYS[1]) + in_draw
local direct = admit_directly(waiting)                              -- straight in on the tokens
out[HEAD_WAITING] = join_line(direct, waiting)                      -- the others to the tail
return finish()
