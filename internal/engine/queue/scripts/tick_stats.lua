-- tick_stats.lua: the line statistics the tick takes: how long the
-- admitted waited, how far the ETA their page was given at entry was off,
-- how long admissions lasted.
--
-- No record per waiting user (a line of millions pays for every byte a
-- place holds): instead, each applied tick leaves a checkpoint in
-- arrivals, scored by the arrival counter then, holding the time, the
-- line left and the settings. A user with arrival number s entered after
-- the checkpoint c with the highest score below s and before the next one
-- (at_next: the next checkpoint's time, or now), at place
-- waiting_c + (s - score_c), and the page answered, as Go's Ticket.ETA
-- does, that the tick ceil(place / refill) - 1 intervals after the next
-- one would admit it. So, at admission:
--   time in line = now - (at_c + at_next) / 2, from the middle of the
--     interval it entered in (within half an interval of the truth);
--   ETA error = now - (at_c + interval_c + floor((place - 1) / refill_c) * interval_c),
--     exact when nobody left or entered again during that interval (each
--     who did makes the place counted one too far back) and the tick was
--     not late when the user entered (its page was then told "now").
-- Places from an opening's draw (scores below 1), and those that entered
-- before the queue's first checkpoint, are not measured. Direct
-- admissions waited 0 and were told no ETA. Groups of like values are
-- the reply's tail (for Prometheus) and go into samples with done.lua's
-- times inside, which the back office reads (Store.LineReport).
local SAMPLES_KEEP = 10000

-- The stale credentials' marks are trimmed at most this many a tick
-- (trim_below, common_places.lua: a ZREMRANGEBYSCORE has no LIMIT), the
-- rest by the ticks after, so that a burst of them never makes one tick
-- long.
local STALE_TRIM_MAX = 10000

-- new_groups returns measured, which adds to groups count people of line
-- index whose kind measured value, the same group as the last of that
-- kind when the value is the same: those admitted together
-- mostly share their checkpoint, so runs are long, and a number compared
-- costs far less than a string key built per user.
local function new_groups(groups, index)
  local last_of = {}
  local function measured(kind, value, count)
    local i = last_of[kind]
    if i and groups[i + 1] == value then
      groups[i + 2] = groups[i + 2] + count
    else
      last_of[kind] = #groups + 1
      groups[#groups + 1] = kind
      groups[#groups + 1] = value
      groups[#groups + 1] = count
      groups[#groups + 1] = index
    end
  end
  return measured
end

-- measure_waits measures the admitted's time in line and ETA error from
-- the checkpoints (admit_seq: their arrival numbers, in arrival order).
local function measure_waits(line, measured, admit_seq, now)
  local first, last = nil, nil
  for _, s in ipairs(admit_seq) do
    if s >= 1 then
      first = first or s
      last = s
    end
  end
  if not first then
    return
  end
  -- Admitted in arrival order: walk the checkpoints below the last one,
  -- then the next one's member.
  local cps = redis.call('ZRANGE', line.arrivals, '-inf', '(' .. last, 'BYSCORE', 'WITHSCORES')
  cps[#cps + 1] = redis.call('ZRANGE', line.arrivals, last, '+inf', 'BYSCORE', 'LIMIT', 0, 1)[1]
  local c, cp = -1, nil
  for _, s in ipairs(admit_seq) do
    while c + 3 <= #cps and tonumber(cps[c + 3]) < s do
      c = c + 2
      cp = nil
    end
    if c >= 1 and s >= 1 then
      if not cp then
        local at, w, r, iv = string.match(cps[c], '^(%d+):(%d+):(%d+):(%d+)$')
        cp = {at = tonumber(at), waiting = tonumber(w), refill = tonumber(r), interval = tonumber(iv), seq = tonumber(cps[c + 1])}
        cp.next_at = cps[c + 2] and tonumber(string.match(cps[c + 2], '^(%d+):')) or now
      end
      measured(STAT_LINE, now - math.floor((cp.at + cp.next_at) / 2), 1)
      if cp.refill > 0 then
        local ahead = math.floor((cp.waiting + s - cp.seq - 1) / cp.refill)
        measured(STAT_ETA, now - (cp.at + (1 + ahead) * cp.interval), 1)
      end
    end
  end
end

-- save_samples appends the groups, then done.lua's times inside since the
-- last tick (the inside HASH, emptied), to the samples LIST, keeping the
-- newest SAMPLES_KEEP. A lane's samples carry its name as a fifth field
-- (lines: index -> line).
local function save_samples(q, groups, lines, now)
  local samples = {}
  for i = 1, #groups, 4 do
    local s = string.format('%d:%d:%d:%d', now, groups[i], groups[i + 1], groups[i + 2])
    if groups[i + 3] > 0 then
      s = s .. ':' .. lines[groups[i + 3] + 1].name
    end
    samples[#samples + 1] = s
  end
  -- done.lua's times inside since the last tick: already observed by the
  -- replica that ran it, so they go to samples only.
  local ends = redis.call('HGETALL', q.inside)
  if #ends > 0 then
    redis.call('DEL', q.inside)
    for i = 1, #ends, 2 do
      samples[#samples + 1] = string.format('%d:%d:%s:%s', now, STAT_INSIDE, ends[i], ends[i + 1])
    end
  end
  for i = 1, #samples, 1000 do
    redis.call('RPUSH', q.samples, unpack(samples, i, math.min(i + 999, #samples)))
  end
  if #samples > 0 then
    redis.call('LTRIM', q.samples, -SAMPLES_KEEP, -1)
  end
end

-- line_statistics measures this tick's admissions (direct: those who
-- entered directly since the last tick; each line's admit_seq: the
-- arrival numbers of those it moved; inside: the purged sessions' times
-- inside), saves them and returns their groups.
local function line_statistics(q, direct, lines, inside, now)
  local groups = {}
  local measured = new_groups(groups, 0)
  if direct > 0 then
    measured(STAT_LINE, 0, direct)
  end
  for _, v in ipairs(inside) do
    measured(STAT_INSIDE, v, 1)
  end
  for _, line in ipairs(lines) do
    measure_waits(line, new_groups(groups, line.index), line.admit_seq, now)
  end
  save_samples(q, groups, lines, now)
  return groups
end

-- checkpoint leaves this tick's checkpoint in a line's arrivals (one
-- with the same score has seen no arrival since: this one replaces it),
-- then drops those no place in the line needs: all below the one that
-- covers the head. There is at most one checkpoint per applied tick,
-- however many arrive, so that trim needs no bound. Its refill is what
-- the line's pages were told an interval admits (line.rate with lanes,
-- else the budget), its interval the refill interval (ms). Returns the
-- line's length.
local function checkpoint(line, now, refill, interval)
  local left = redis.call('ZCARD', line.waiting)
  local seq_now = line.seq_now
  redis.call('ZREMRANGEBYSCORE', line.arrivals, seq_now, seq_now)
  redis.call('ZADD', line.arrivals, seq_now, string.format('%d:%d:%d:%d', now, left, refill, interval))
  local head = redis.call('ZRANGE', line.waiting, 0, 0, 'WITHSCORES')
  local cover = redis.call('ZRANGE', line.arrivals, '(' .. (head[2] or seq_now + 1), '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, 1, 'WITHSCORES')
  if cover[2] then
    redis.call('ZREMRANGEBYSCORE', line.arrivals, '-inf', '(' .. cover[2])
  end
  -- The stale credentials' marks the head has passed: the snapshot places
  -- no arrival number below the head (snapshot.go), so a mark left below
  -- it by the bound only costs a reader a Redis lookup it would make
  -- anyway, until a later tick trims it.
  trim_below(line.stale, '(' .. (head[2] or seq_now + 1), STALE_TRIM_MAX)
  return left
end
