-- tick_move.lua: moving the heads of the lines into the entered set,
-- dropping the abandoned places and holding the silent ones. Each line, a
-- lane's too, is moved the same way, with its own keys (lines_now). The
-- steps share one table of the move's inputs, mv: now, abandon_after (ms,
-- 0: off), grace (outage_grace), drop_max, hold_max, and dropped, the
-- list of places dropped so far.

-- Moving the head. A user not heard from (enter, status) for
-- abandon_after has closed the page: the place is dropped when it reaches
-- the head, without spending a token, and the next one moves instead; at
-- most drop_max such places per tick and line. A place with no record at
-- all was far from the head when last heard (only places near_head keep
-- one): its page may well be polling, just not yet near enough to say so
-- (a refill raised tenfold brings such places to the head fast). It is
-- held: set aside in the held ZSET at its arrival number, out of the
-- line, and asked to confirm: a mark of -(the confirmation's deadline)
-- stands for its record. Its next status call (status.lua) puts it back
-- in the line at its arrival number, ahead of everyone behind it, so the
-- next tick admits it: late, not lost. Unconfirmed by the deadline, it is
-- dropped as abandoned (drop_expired). Set aside, held places never stop
-- a tick from reaching the people behind them: silent places at the head
-- cost the line none of its rate. A tick drops at most drop_max places a
-- line in all (held ones past their deadline first); an abandoned place
-- popped beyond that is held with a deadline already past, for the next
-- tick to drop. At most hold_max are held per tick, so a tick pops at
-- most room + drop_max + hold_max + 1000 places (a round's pop is at most
-- 1000), and drop_expired reads at most drop_max marks. The deadline is
-- abandon_after from now, the time any place is given to be heard from: a
-- page polling as told asks at least twice in it.

-- Outages. A place is judged by when it was last heard (or its deadline
-- to confirm), and no page can be heard while Redis is away or every
-- replica is down: a holder asking then gets a 503, and its page backs off
-- (longer each time) before it asks again. So time when no tick could run
-- must not count against anyone. A tick applied more than an interval
-- (and at least OUTAGE_MIN_MS: a scheduler under load lags by less) after
-- it was due finds that the room was away for about that long; from then
-- until "grace_until_ms" in the tick HASH, the away time again and a full
-- abandon_after later, no place is dropped as abandoned: a place that
-- reaches the head unheard is held aside until then instead, and the
-- holder's next ask brings it back (status.lua). The grace is one field,
-- whatever the line's length: no mark is rewritten. A place that went
-- silent with no outage is dropped as before.
local OUTAGE_MIN_MS = 1000

-- outage_grace returns until when no place is dropped as abandoned (0:
-- no outage), recording a new one when this tick comes after one (due:
-- when it was due, nil for a queue's first).
local function outage_grace(tick_key, now, due, was_away, cfg)
  local grace = tonumber(redis.call('HGET', tick_key, 'grace_until_ms')) or 0
  local away = due and now - due or 0
  -- Only a replica that could not reach Redis, or has just started, says
  -- the time since the last tick was an outage (was_away): a late timer
  -- on a busy machine is not one, and must not stop the drops.
  if was_away and cfg.abandon_after_ms > 0 and away > math.max(cfg.refill_interval_ms, OUTAGE_MIN_MS) then
    grace = math.max(grace, now + away + cfg.abandon_after_ms)
    redis.call('HSET', tick_key, 'grace_until_ms', grace)
  end
  return grace
end

-- drop_expired drops the held places whose deadline has passed (heard
-- marks in [-now, 0)), at most drop_max, adding them to mv.dropped: a
-- place that re-entered the line meanwhile keeps its new place, only the
-- mark and the held entry go (unheard again, it is asked again if it
-- reaches the head silent).
local function drop_expired(line, mv)
  if mv.now < mv.grace then
    return -- the room was away: see "Outages"
  end
  local marks = redis.call('ZRANGE', line.heard, -mv.now, '(0', 'BYSCORE', 'LIMIT', 0, mv.drop_max)
  if #marks == 0 then
    return
  end
  local was_held = redis.call('ZMSCORE', line.held, unpack(marks))
  local in_line = redis.call('ZMSCORE', line.waiting, unpack(marks))
  local dropped = mv.dropped
  for i, u in ipairs(marks) do
    if was_held[i] and not in_line[i] then
      dropped[#dropped + 1] = u
    end
  end
  redis.call('ZREM', line.heard, unpack(marks))
  redis.call('ZREM', line.held, unpack(marks))
end

-- release puts held places back in the line when abandonment is off
-- (abandon_after 0): nobody is asked to confirm any more.
local function release(line, hold_max)
  local back = redis.call('ZRANGE', line.held, 0, hold_max - 1, 'WITHSCORES')
  if #back == 0 then
    return
  end
  local args, users = {}, {}
  for i = 1, #back, 2 do
    args[#args + 1] = back[i + 1]
    args[#args + 1] = back[i]
    users[#users + 1] = back[i]
  end
  redis.call('ZADD', line.waiting, unpack(args))
  redis.call('ZREM', line.held, unpack(users))
end

-- pop_head moves, drops or holds places from the head until room users
-- are admitted (into admit, their arrival numbers into admit_seq) or a
-- bound is reached. Each round pops what is still to fill, more after a
-- round that admitted nobody (never more than 1000, far below Lua's stack
-- limit for unpack, nor than may still be held); a heard place popped
-- beyond room goes back (put_back). Returns the places held.
local function pop_head(line, room, mv, admit, admit_seq)
  local now, after, grace, dropped = mv.now, mv.abandon_after, mv.grace, mv.dropped
  local drop_max, hold_max = mv.drop_max, mv.hold_max
  local held, asked, put_back = {}, {}, {}
  local gone_before = now - after
  local confirm_by = now + after
  local want = room
  while #admit < room and #held < 2 * hold_max do
    local popped = redis.call('ZPOPMIN', line.waiting, math.min(want, 1000, hold_max - #held / 2))
    if #popped == 0 then
      break
    end
    local users, seqs = {}, {}
    for i = 1, #popped, 2 do
      users[#users + 1] = popped[i]
      seqs[#users] = popped[i + 1]
    end
    local heard = redis.call('ZMSCORE', line.heard, unpack(users))
    local done, admitted_before = {}, #admit
    for i, u in ipairs(users) do
      local h = tonumber(heard[i])
      if after > 0 and (not h or (h < 0 and -h > now)) then
        -- Set aside until it confirms (or its deadline passes).
        held[#held + 1] = seqs[i]
        held[#held + 1] = u
        if not h then
          asked[#asked + 1] = -confirm_by
          asked[#asked + 1] = u
        end
      elseif after > 0 and h <= gone_before and now < grace then
        -- Unheard for abandon_after, but the room was away meanwhile
        -- ("Outages"): held until the grace ends, not dropped.
        held[#held + 1] = seqs[i]
        held[#held + 1] = u
        asked[#asked + 1] = -grace
        asked[#asked + 1] = u
      elseif after > 0 and h <= gone_before and #dropped < drop_max then
        dropped[#dropped + 1] = u
        done[#done + 1] = u
      elseif after > 0 and h <= gone_before then
        -- Past this tick's drops: held, its deadline past, for the next.
        held[#held + 1] = seqs[i]
        held[#held + 1] = u
        asked[#asked + 1] = -now
        asked[#asked + 1] = u
      elseif #admit < room then
        admit[#admit + 1] = u
        admit_seq[#admit] = tonumber(seqs[i])
        done[#done + 1] = u
      else
        put_back[#put_back + 1] = seqs[i]
        put_back[#put_back + 1] = u
      end
    end
    if #done > 0 then
      redis.call('ZREM', line.heard, unpack(done))
    end
    want = room - #admit
    if #admit == admitted_before then
      want = math.max(want, 2 * #users)
    end
  end
  for i = 1, #held, 1000 do
    redis.call('ZADD', line.held, unpack(held, i, math.min(i + 999, #held)))
  end
  for i = 1, #asked, 1000 do
    redis.call('ZADD', line.heard, unpack(asked, i, math.min(i + 999, #asked)))
  end
  if #put_back > 0 then
    redis.call('ZADD', line.waiting, unpack(put_back))
  end
  return #held / 2
end

-- move_lines moves up to room places in all: each line first up to its
-- allocation (split, tick_lines.lua), then the room they left to the
-- lines that filled theirs, the most owed first, until the room is used
-- or no line has more. Each line's admitted and their arrival numbers go
-- into line.admit and line.admit_seq, its drops are counted in
-- line.dropped (the places themselves into mv.dropped); returns everyone
-- admitted.
local function move_lines(room, lines, mv)
  local all, dropped = {}, mv.dropped
  local function take(line, n)
    local admit, admit_seq, before = {}, {}, #dropped
    pop_head(line, n, mv, admit, admit_seq)
    line.dropped = line.dropped + #dropped - before
    for i, u in ipairs(admit) do
      line.admit[#line.admit + 1] = u
      line.admit_seq[#line.admit_seq + 1] = admit_seq[i]
      all[#all + 1] = u
    end
    return #admit
  end
  for _, line in ipairs(lines) do
    line.admit, line.admit_seq, line.dropped = {}, {}, 0
    if mv.abandon_after > 0 then
      local before = #dropped
      drop_expired(line, mv)
      line.dropped = #dropped - before
    else
      release(line, mv.hold_max)
    end
    if #lines == 1 then
      line.alloc = room
    end
    line.full = take(line, line.alloc) == line.alloc
  end
  local spare = room - #all
  while spare > 0 do
    local open = {}
    for _, line in ipairs(lines) do
      if line.full then
        open[#open + 1] = line
      end
    end
    if #open == 0 then
      break
    end
    table.sort(open, function(a, b)
      if a.credit ~= b.credit then
        return a.credit > b.credit
      end
      return a.index < b.index
    end)
    for _, line in ipairs(open) do
      local got = take(line, spare)
      line.full = got == spare and got > 0
      spare = spare - got
      if spare == 0 then
        break
      end
    end
  end
  return all
end

-- admit writes the admissions (all) and the drops, and tells the site.
-- q: the queue's keys.
local function admit(q, all, dropped, now)
  for i = 1, #all, 500 do
    local chunk = {}
    for j = i, math.min(i + 499, #all) do
      chunk[#chunk + 1] = now
      chunk[#chunk + 1] = all[j]
    end
    redis.call('ZADD', q.entered, unpack(chunk))
  end
  mark_gone(q.gone, 'abandoned', dropped, now)
  emit(q.events, q.config, 'abandoned', dropped, now)
  emit(q.events, q.config, 'admitted', all, now)
end
