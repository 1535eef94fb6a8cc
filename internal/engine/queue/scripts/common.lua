-- common.lua: the names of the replies, first of the prelude that
-- scripts.go puts before every queue script: configLua's reading of the
-- settings, then this file, common_config.lua (clock, config, the next
-- tick, the ETA), common_limits.lua (rate limits), common_places.lua (durations
-- rounded, why a place ended), common_events.lua (webhooks) and
-- common_settings.lua (what every writer of the settings keeps in step).
-- Each script reads the clock and the queue's config from Redis itself, so
-- every replica agrees on time and settings whatever its own clock says.

-- What the replies hold, named. reply.go mirrors every list below in the
-- same order (status*, head*, info*, tick*, windows*), and TestRepliesMatchLua fails
-- when the two disagree: keep one name per line, "local NAME = number".

-- Status codes of a call's answer. ALLOWED: challenge.lua let the call
-- through. NOT_OPEN: a scheduled opening's pre-queue window has not
-- begun, so nobody can join yet. The last five refuse one call and
-- change nothing for its user: LIMITED, the caller went over a rate
-- limit; FULL, the line is at its cap (max_waiting); CHALLENGE, the queue
-- asks for proof of work and the call brought none that is valid (or
-- brought one already used); HUMAN, the queue asks for a human check
-- (networks.lua, price_need); OTHER_LINE, an account's enter
-- (other_line, enter_defences.lua) while the account holds a place in
-- another of the queue's lines; its place is the index of that line
-- among those the call named, or 0 when a lane the call did not name may
-- hold places (the caller read the lanes before a change: read, call
-- again). DRAW_STALE: an enter into a sealed draw's pre-queue whose
-- caller brought no draw keys, or keys of another seed than the one
-- sealed (draw_id): nothing was changed, not even a rate limit charged;
-- the caller reads the seal (draw.lua) and calls again (docs/DRAW.md).
local ALLOWED = 0
local ENTERED = 1
local WAITING = 2
local NOT_WAITING = 3
local NOT_OPEN = 4
local LIMITED = 5
local FULL = 6
local CHALLENGE = 7
local HUMAN = 8
local OTHER_LINE = 9
local CLOSED = 10
local DRAW_STALE = 11

-- The head of enter.lua's and status.lua's replies (reply_head), before
-- a status and a place per call. Times and durations in ms.
local HEAD_WAITING = 1          -- people in the line, a draw's participants included
local HEAD_UNTIL_NEXT_TICK = 2  -- until_next_tick_ms
local HEAD_INTERVAL = 3         -- refill_interval_ms
local HEAD_REFILL_SIZE = 4
local HEAD_TTL = 5              -- session_ttl_ms
local HEAD_PAUSED = 6           -- 0 or 1
local HEAD_OPENS_AT = 7         -- a scheduled opening (0: none)
local HEAD_PREQUEUE_FROM = 8    -- its pre-queue window's start (0: none)
local HEAD_ABANDON_AFTER = 9    -- abandon_after_ms (0: off)
local HEAD_UNTIL_OPEN = 10      -- until a scheduled opening (0: none ahead)
local HEAD_CLOSED = 11          -- when the operator closed the sale (0: open; close.lua)

-- info.lua's reply.
local INFO_WAITING = 1          -- a draw's participants not yet placed included
local INFO_ENTERED = 2          -- admissions that have not ended (the active users)
local INFO_TOKENS = 3
local INFO_REFILL_SIZE = 4
local INFO_INTERVAL = 5
local INFO_TTL = 6
local INFO_LAST_TICK_AT = 7     -- 0: no tick applied yet
local INFO_NOW = 8              -- the Redis clock
local INFO_MAX_ACTIVE = 9
local INFO_PAUSED = 10
local INFO_ABANDON_AFTER = 11
local INFO_ABANDONED = 12       -- places the last tick dropped as abandoned
local INFO_OPENS_AT = 13
local INFO_PREQUEUE_FROM = 14
local INFO_DRAW_FOR = 15        -- the opening the last draw was for
local INFO_DRAW_PLACING = 16    -- 1 while it is being placed (its seed: the tick HASH's draw_seed)
local INFO_DRAW_COUNT = 17      -- the participants it placed
local INFO_ADMITTED = 18        -- admitted so far in the interval in progress
local INFO_MAX_WAITING = 19
local INFO_DIFFICULTY = 20      -- challenge_difficulty
local INFO_BUDGET = 21          -- the refill an interval admits now: refill_effective while adapting, else refill_size
local INFO_CLOSED = 22          -- when the operator closed the sale (0: open)

-- tick.lua's reply.
local TICK_APPLIED = 1          -- 1 applied, 0 not due; or, having changed nothing, LANES_CHANGED or WINDOWS_DUE
local TICK_MOVED = 2
local TICK_WAITING = 3
local TICK_TOKENS = 4
local TICK_PURGED = 5
local TICK_ADMITTED = 6         -- in the interval that just ended
local TICK_ABANDONED = 7
local TICK_LATE = 8             -- ms after it was due
local TICK_UNTIL_NEXT = 9       -- ms until the next tick is due (0: now, or once a draw is placed)
local TICK_BUDGET = 10          -- the refill the interval this tick opened admits (refill_effective while adapting)
local TICK_ADAPTED = 11         -- 1: the proposed refill_effective was stored (adapt)
local TICK_LANES = 12           -- the lanes whose counts follow

-- TICK_APPLIED of a call to make again: the lanes changed since the
-- caller read them (read them again), or a window of the schedule starts
-- or ends (run windows.lua first).
local LANES_CHANGED = -1
local WINDOWS_DUE = -2

-- windows.lua's reply.
local WINDOWS_DID = 1           -- 0 nothing, 1 started a window, 2 ended one, 3 both
local WINDOWS_AT = 2            -- the start (ms) of the window started (or, alone, ended)
local WINDOWS_CHANGES = 3       -- the fields they changed, JSON {"ended", "started": [{field, old, new}]}, "" for none
local WINDOW_STARTED = 1        -- WINDOWS_DID's bits
local WINDOW_ENDED = 2

-- What the line felt like: the kinds of the durations the tick
-- measures, each reported as a group {kind, value_ms, count} after the
-- TICK_* values and kept for the back office in the samples LIST
-- (tick_stats.lua).
local STAT_LINE = 1             -- time in line: entry to admission (0 for a direct admission)
local STAT_ETA = 2              -- the ETA's error: actual admission less the one predicted at entry
local STAT_INSIDE = 3           -- time inside: admission to done or expiry
