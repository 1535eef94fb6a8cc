-- enter_join.lua: enter.lua's places, for the calls the defences let
-- through (b.users, enter_defences.lua): before an opening the draw, else
-- straight in on the tokens while nobody waits, else the tail of the
-- line. Re-entry always goes to the back: an admission is given up, and a
-- place in the line is replaced by the new arrival number (ZADD updates
-- the score of a member already there). Each step is one command for the
-- whole batch, not one per user. Only a newcomer within near_head places
-- of the head is recorded as heard: the others are not until they come
-- near (status.lua), so a place far back costs the line's ZSET entry
-- alone. b is the batch (enter.lua).

-- hold records the places just made, b.users[js[k]] at arrival number
-- seq(k) (0 in a draw), in the held ZSETs of the networks they came
-- from: what the price of those networks' next places counts. They count
-- in the batch's arrivals, whose rate the price feels.
local function hold(b, js, seq)
  local held, slot, users = b.held, b.slot, b.users
  b.arrived = b.arrived + #js
  for k, j in ipairs(js) do
    if held[slot[j]] then
      held_add(held[slot[j]], users[j], seq(k))
    end
  end
end

-- answer sets the answer of b.users[j].
local function answer(b, j, status, value)
  local s = b.slot[j]
  b.out[b.head + 2 * s - 1] = status
  b.out[b.head + 2 * s] = value
end

-- room_for returns which of the users of list (indices into b.users) may
-- join a line of `line` people capped at max_waiting: everyone already in
-- it (a re-entry: is_member(names)[k] is true), and newcomers while there
-- is room. The others are answered FULL, with when to try again: the
-- ticks the excess takes from `moves_in` ms (the next tick, or before an
-- opening the opening).
local function room_for(b, list, line, moves_in, is_member)
  local cfg, users = b.cfg, b.users
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
      answer(b, j, FULL, until_room_ms(line + newcomers, cfg.max_waiting, cfg.budget, cfg.refill_interval_ms, moves_in))
      -- The call changed nothing: its proof of work stays unspent, for
      -- when the line has room.
      local proof = b.proof_key[b.slot[j]]
      if proof then
        redis.call('DEL', proof)
      end
    end
  end
  return kept
end

-- join_draw answers every call before a scheduled opening: nobody enters
-- the line; from prequeue_from everyone joins the draw (room_for's cap
-- allowing; the order among them is drawn at the opening), before it
-- everyone is NOT_OPEN. A participant is kept under its draw key, which
-- the caller computed from the sealed seed (enter.lua checked that it is
-- the sealed draw's): the draw keys ZSET orders them by it (docs/DRAW.md).
local function join_draw(b)
  local k, out, users, now = b.k, b.out, b.users, b.now
  out[HEAD_WAITING] = redis.call('ZCARD', k.waiting) + b.in_draw
  if now < b.cfg.prequeue_from_ms then
    for j = 1, #users do
      answer(b, j, NOT_OPEN, 0)
    end
    return
  end
  local all = {}
  for j = 1, #users do
    all[j] = j
  end
  local joining = room_for(b, all, out[HEAD_WAITING], out[HEAD_UNTIL_OPEN], function(names)
    local in_set = redis.call('SMISMEMBER', k.draw, unpack(names))
    for i, v in ipairs(in_set) do
      in_set[i] = v == 1
    end
    return in_set
  end)
  if #joining > 0 then
    local list, heard = {}, {}
    for i, j in ipairs(joining) do
      list[i] = users[j]
      heard[2 * i - 1] = now
      heard[2 * i] = users[j]
      answer(b, j, WAITING, 0)
    end
    -- Entering again gives up an admission, as ever; in the draw it
    -- changes nothing else (the order is drawn at the opening).
    if redis.call('ZREM', k.entered, unpack(list)) > 0 then
      redis.call('HDEL', k.admitted, unpack(list))
    end
    redis.call('ZREM', k.waiting, unpack(list))
    redis.call('SADD', k.draw, unpack(list))
    -- Every score 0: ordered by member, the draw key first. A member
    -- already there (entering again) stays as it is; one whose user left
    -- stays too, and the draw skips it (place_draw, tick_close.lua).
    local keyed = {}
    for i, j in ipairs(joining) do
      keyed[2 * i - 1] = 0
      keyed[2 * i] = ARGV[b.drawn + b.slot[j]] .. users[j]
    end
    redis.call('ZADD', k.draw_keys, unpack(keyed))
    redis.call('ZADD', k.heard, unpack(heard))
    hold(b, joining, function() return 0 end)
    out[HEAD_WAITING] = redis.call('ZCARD', k.waiting) + redis.call('SCARD', k.draw)
  end
end

-- admit_directly lets the first users straight in while tokens remain,
-- if nobody waits (waiting: the line and a draw still being placed), the
-- queue is not paused and the cap on active users leaves room. Returns
-- how many it admitted. A missing token key is a full bucket, which the
-- line's check keeps from letting a newcomer jump the line.
local function admit_directly(b, waiting)
  local k, cfg, users, now = b.k, b.cfg, b.users, b.now
  local tokens = tonumber(redis.call('GET', k.tokens)) or cfg.budget
  if tokens > cfg.budget then
    tokens = cfg.budget -- refill_size was lowered since the last tick
  end
  local direct = 0
  if waiting == 0 and cfg.paused == 0 then
    direct = math.min(tokens, #users)
    if cfg.max_active > 0 and direct > 0 then
      direct = math.min(direct, math.max(0, cfg.max_active - active_count(k.entered, now, cfg.session_ttl_ms)))
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
    answer(b, j, ENTERED, now)
  end
  -- ZADD counts new members only: fewer means someone held an admission,
  -- now replaced by this one, whose start is its score.
  if redis.call('ZADD', k.entered, unpack(args)) < direct then
    redis.call('HDEL', k.admitted, unpack(list))
  end
  redis.call('SET', k.tokens, tokens - direct)
  redis.call('HINCRBY', k.tick, 'direct', direct)
  b.arrived = b.arrived + direct
  emit(k.events, k.config, 'admitted', list, now)
  return direct
end

-- answer_batch answers the usual batch: every user of rest new to the
-- line (so each given once), in the order given behind the before
-- already there, at arrival numbers first + k. Returns the heard marks
-- of those within near of the head.
local function answer_batch(b, rest, before, first, near)
  local out, head, slot, seqs, users, now = b.out, b.head, b.slot, b.seqs, b.users, b.now
  local heard = {}
  for k = 1, #rest do
    local s = slot[rest[k]]
    out[head + 2 * s - 1] = WAITING
    out[head + 2 * s] = before + k
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
-- its last entry in this call: positions are the places once the whole
-- call is done. Returns the heard marks of those within near of the head.
local function answer_repeats(b, rest, waiting, first, near)
  local users, slot, seqs = b.users, b.slot, b.seqs
  local place, seq_of, behind = {}, {}, 0
  for k = #rest, 1, -1 do
    local user = users[rest[k]]
    if not place[user] then
      place[user] = waiting - behind
      seq_of[user] = first + k
      behind = behind + 1
    end
    answer(b, rest[k], WAITING, place[user])
    seqs[slot[rest[k]]] = seq_of[user]
  end
  -- Some went to the back from a place in the line: their older
  -- credentials no longer name it (snapshot.lua).
  local stale = {}
  for user, seq in pairs(seq_of) do
    stale[#stale + 1] = seq - 1
    stale[#stale + 1] = user
  end
  redis.call('ZADD', b.k.stale, 'GT', unpack(stale))
  -- Heard from now: those near the head only.
  local heard = {}
  for user, p in pairs(place) do
    if p <= near then
      heard[#heard + 1] = b.now
      heard[#heard + 1] = user
    end
  end
  return heard
end

-- join_line puts the users after the first direct at the tail in the
-- order given, each with its own arrival number, giving up any admission
-- they held; newcomers only while the line's cap leaves room. Returns the
-- line's length after them.
local function join_line(b, direct, waiting)
  local k, cfg, users = b.k, b.cfg, b.users
  local rest = {}
  for j = direct + 1, #users do
    rest[#rest + 1] = j
  end
  -- Places set aside at the head are still the line's, in its cap.
  local held_now = 0
  if cfg.max_waiting > 0 then
    held_now = redis.call('ZCARD', k.held)
  end
  rest = room_for(b, rest, waiting + held_now, b.out[HEAD_UNTIL_NEXT_TICK], function(names)
    local scores = redis.call('ZMSCORE', k.waiting, unpack(names))
    local member = {}
    for i = 1, #names do
      member[i] = scores[i] ~= false
    end
    return member
  end)
  if #rest == 0 then
    return waiting
  end
  local list, args = {}, {}
  local first = redis.call('INCRBY', k.seq, #rest) - #rest
  for i, j in ipairs(rest) do
    list[i] = users[j]
    args[2 * i - 1] = first + i
    args[2 * i] = users[j]
  end
  if redis.call('ZREM', k.entered, unpack(list)) > 0 then
    redis.call('HDEL', k.admitted, unpack(list))
  end
  -- ZADD counts newcomers only: a user already waiting moves to the back.
  local before, added = waiting, redis.call('ZADD', k.waiting, unpack(args))
  hold(b, rest, function(i) return first + i end)
  waiting = waiting + added
  local near, heard = near_head(cfg.budget, cfg), nil
  if added == #rest then
    heard = answer_batch(b, rest, before, first, near)
  else
    heard = answer_repeats(b, rest, waiting, first, near)
  end
  if #heard > 0 then
    redis.call('ZADD', k.heard, unpack(heard))
  end
  return waiting
end
