-- tick_soldout.lua: the tick's step while the operator has closed the
-- sale (close.lua): every waiting place, in every line, is dropped with
-- the reason "closed" (its holder's next status is told so, with the
-- operator's message), at most max a call, so that a line of millions is
-- emptied by many short calls, never one long one (as a draw is placed,
-- tick_close.lua). Admissions are left alone.

-- pop_line takes at most n places of one part of a line: a ZSET's lowest
-- scores, or a SET's members (a draw not placed yet).
local function pop_line(key, n, is_set)
  if n <= 0 then
    return {}
  end
  if is_set then
    return redis.call('SPOP', key, n)
  end
  local popped, users = redis.call('ZPOPMIN', key, n), {}
  for i = 1, #popped, 2 do
    users[#users + 1] = popped[i]
  end
  return users
end

-- forget_heard removes users from a line's heard ZSET, 500 at a time.
local function forget_heard(heard_key, users)
  for i = 1, #users, 500 do
    redis.call('ZREM', heard_key, unpack(users, i, math.min(i + 499, #users)))
  end
end

-- drop_closed drops at most max places of the lines (their line, held
-- places and draw), records why, and returns how many it dropped and
-- whether any are left. Nobody is emitted one by one: the site had its
-- sale_closed.
local function drop_closed(q, lines, now, max)
  local dropped = 0
  for _, line in ipairs(lines) do
    for _, part in ipairs({{line.waiting, false}, {line.held, false}, {line.draw, true}}) do
      local users = pop_line(part[1], max - dropped, part[2])
      if #users > 0 then
        forget_heard(line.heard, users)
        mark_gone(q.gone, 'closed', users, now)
        dropped = dropped + #users
      end
    end
    -- The draw's keys go with its participants (each counts in max; no
    -- user is named by them that the draw SET did not name).
    if dropped < max then
      local n = math.min(redis.call('ZCARD', line.draw_keys), max - dropped)
      if n > 0 then
        redis.call('ZREMRANGEBYRANK', line.draw_keys, 0, n - 1)
        dropped = dropped + n
      end
    end
  end
  if dropped < max then
    return dropped, false
  end
  for _, line in ipairs(lines) do
    if redis.call('ZCARD', line.waiting) + redis.call('ZCARD', line.held) + redis.call('SCARD', line.draw) +
        redis.call('ZCARD', line.draw_keys) > 0 then
      return dropped, true
    end
  end
  return dropped, false
end
