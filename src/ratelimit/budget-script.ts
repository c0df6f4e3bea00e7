/**
 * The shared budget of one credential, as one atomic Lua script (a token bucket, with what
 * the server's headers said folded in). Every key it touches is passed in KEYS and shares one
 * hash tag, so the script runs on Redis Cluster (no CROSSSLOT). Time is Redis's own (`TIME`),
 * one clock for every host. Every field is read with a default, so a missing or mangled one
 * can never make the script fail half-way (`attempt to perform arithmetic on a nil value`).
 *
 * KEYS[1] hash: tokens, ts, limit, burst, paused (until), wrem/wreset (a fixed window's
 *         remaining and reset), seq (takes so far), obsseq (newest take a response was used
 *         of), hold1/hold2 (normal/high priority work is waiting somewhere until then),
 *         ckseq/ckat (the newest take when the outstanding takes were last swept, and when),
 *         wlast (the reset of the latest fixed window a response told), born (when it was
 *         created: a take's seq names a take of this budget only, not of one created anew
 *         after Redis lost it), solo (the last take granted while no other was outstanding),
 *         wlow/wlowseq (the lowest remaining a response of that window told, and its take),
 *         wseen (when a process last told a fixed window)
 * KEYS[2] sorted set: process id -> last seen (ms), for the 1/N fallback and `status`
 * KEYS[3] sorted set: the outstanding takes, seq -> seq: taken, and no response seen yet
 * ARGV    op (take | observe | return | beat), process id, limit, burst, window ms, then per op:
 *         take:    priority (0 low, 1 normal, 2 high), remaining hint, reset-in hint, tokens wanted
 *         observe: server limit, remaining, take seq, reset in ms, server model, pause ms
 *                  (every header left empty: the take's request ended without news), the
 *                  budget's born its takes were from, then the seqs of other takes whose
 *                  requests ended meanwhile
 *         return:  first seq, count, the budget's born they were from: leased takes never
 *                  sent, back into the bucket
 * Returns {wait ms, seq, limit, burst, tokens * 1000, processes, paused for ms, window remaining or -1, born},
 *         for `take` then {tokens granted (seqs seq-granted+1 .. seq), ms they stay valid}, and
 *         for `beat` the process ids.
 */
/** How long a take counts as outstanding at least (at most twice that) when no response is seen. */
const OUTSTANDING_MS = 15_000;

export const BUDGET_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local op = ARGV[1]
local cfgLimit = tonumber(ARGV[3]) or 1
local cfgBurst = tonumber(ARGV[4]) or 1
local windowMs = math.max(1, tonumber(ARGV[5]) or 60000)
local f = redis.call('HMGET', KEYS[1], 'tokens', 'ts', 'limit', 'burst', 'paused', 'wrem', 'wreset', 'seq', 'obsseq', 'hold1', 'hold2', 'ckseq', 'ckat', 'wlast', 'born', 'solo', 'wlow', 'wlowseq', 'wseen')
local fresh = not f[2]
local limit = math.max(1, math.min(cfgLimit, tonumber(f[3]) or cfgLimit))
local burst = math.max(1, math.min(cfgBurst, tonumber(f[4]) or cfgBurst))
local tokens = tonumber(f[1]) or burst
local ts = tonumber(f[2]) or now
local paused = tonumber(f[5]) or 0
local wrem = tonumber(f[6])
local wreset = tonumber(f[7])
local seq = tonumber(f[8]) or 0
local obsseq = tonumber(f[9]) or 0
local hold1 = tonumber(f[10]) or 0
local hold2 = tonumber(f[11]) or 0
local ckseq = tonumber(f[12]) or 0
local ckat = tonumber(f[13]) or now
local wlast = tonumber(f[14])
-- A budget an older script created has no born: it gets one now.
local born = tonumber(f[15]) or now
local solo = tonumber(f[16]) or 0
local wlow = tonumber(f[17])
local wlowseq = tonumber(f[18]) or 0
local wseen = tonumber(f[19])
local rate = limit / windowMs
-- A window always has an end (an older script could leave one without).
if not wreset then wrem = nil end

-- A take whose response never comes back (its process killed) stops counting as outstanding
-- after ${OUTSTANDING_MS / 1000} to ${(2 * OUTSTANDING_MS) / 1000} s: longer than a request may take.
if now - ckat >= ${OUTSTANDING_MS} then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ckseq)
  ckseq = seq
  ckat = now
end

if fresh and op == 'take' then
  -- A budget that does not exist yet (first process, or Redis restarted empty) starts from what this process knows.
  local hint = tonumber(ARGV[7])
  local hintReset = tonumber(ARGV[8])
  if hint then
    tokens = math.min(tokens, hint)
    if hintReset and hintReset > 0 then wrem = hint; wreset = now + hintReset end
  end
end
tokens = math.min(burst, tokens + math.max(0, now - ts) * rate)
if wreset and now >= wreset then
  -- A new fixed window, whose end no response has told yet. Every take still outstanding may
  -- be counted in it (one sent just before the edge arrives after it): they come off its limit.
  -- It ends a window's length after the last (the first response in it tells its real end):
  -- with no response coming at all (the API down across the edge), a spent window that had no
  -- end would refuse every take of every process for good.
  wrem = limit - redis.call('ZCARD', KEYS[3])
  wreset = wreset + math.ceil((now - wreset + 1) / windowMs) * windowMs
end

local wait = 0
local granted = 0
local leaseMs = 0
if op == 'take' then
  local prio = tonumber(ARGV[6]) or 1
  -- Low priority leaves a reserve, so high priority work of any process finds a token.
  local need = 1
  if prio < 1 then need = 1 + math.max(1, math.floor(burst / 10)) end
  if paused > now then
    wait = paused - now
  elseif wrem and wrem <= 0 then
    -- Until the window's reset.
    wait = wreset - now
  elseif prio < 2 and hold2 > now then
    wait = hold2 - now
  elseif prio < 1 and hold1 > now then
    wait = hold1 - now
  else
    if tokens < need then wait = math.ceil((need - tokens) / rate) end
    -- In a fixed window low priority leaves the reserve of what the window has left, too.
    if wrem and wrem < need then wait = math.max(wait, wreset - now) end
  end
  if wait > 0 then
    wait = math.max(1, math.ceil(wait))
    -- Lower priorities stay off until a little after this one is due back (it may come back late).
    if prio == 2 then hold2 = math.max(hold2, now + wait + 250) end
    if prio == 1 then hold1 = math.max(hold1, now + wait + 250) end
  else
    -- A process with more work queued may take more than one token per call, from what is
    -- left above the reserve this priority must leave. In a fixed window too: one taken near
    -- its end and sent after it stays outstanding, so the next window counts it.
    local room = 1 + math.floor(tokens - need)
    if wrem then room = math.min(room, 1 + math.floor(wrem - need)) end
    granted = math.max(1, math.min(math.floor(tonumber(ARGV[9]) or 1), room))
    tokens = tokens - granted
    -- A take granted while none is on its way: what its response says is left counts every take before it.
    if granted == 1 and redis.call('ZCARD', KEYS[3]) == 0 then solo = seq + 1 end
    for s = seq + 1, seq + granted do redis.call('ZADD', KEYS[3], s, s) end
    seq = seq + granted
    if wrem then wrem = wrem - granted end
    -- Unused ones lapse soon.
    leaseMs = 250
  end
elseif op == 'observe' then
  -- Takes of a budget Redis has lost since (restarted empty, evicted) are none of this one's,
  -- whose seqs start again at 1: what is said of them is not applied to its takes.
  local ours = tonumber(ARGV[12]) == born
  local serverLimit = tonumber(ARGV[6])
  if serverLimit and serverLimit > 0 and serverLimit < limit then
    limit = serverLimit
    burst = math.min(burst, serverLimit)
    tokens = math.min(tokens, burst)
  end
  local remaining = tonumber(ARGV[7])
  local takeSeq = tonumber(ARGV[8]) or 0
  if not ours then takeSeq = 0 end
  redis.call('ZREM', KEYS[3], takeSeq)
  -- Only a response to a later take than the last one used is news for the tokens. Not in its count: the takes
  -- after it, and in a fixed window the earlier ones still outstanding (requests overtake each
  -- other on the way, most at a window's start, when every process sends at once; some were sent
  -- in the last one). Not in a bucket: most of those were counted, their responses still on the
  -- way, and the tokens, never raised by a response, would stay that much below the server's.
  if remaining and takeSeq > 0 and takeSeq <= seq then
    local news = takeSeq > obsseq
    local overtaken = 0
    if ARGV[10] ~= 'bucket' then overtaken = redis.call('ZCOUNT', KEYS[3], '-inf', '(' .. takeSeq) end
    local estimate = math.max(0, remaining - (seq - takeSeq) - overtaken)
    if news then
      obsseq = takeSeq
      if ARGV[10] == 'bucket' and takeSeq == solo and takeSeq == seq then
        -- Nothing on its way when it was taken, and nothing taken since: the server's count is
        -- the tokens (less what refilled on the way back). It raises them again where requests
        -- that overtook others on the way were counted twice, which else holds a bucket's
        -- tokens that much below the server's for as long as the processes keep it spent.
        tokens = math.min(burst, estimate)
      else
        tokens = math.min(tokens, estimate)
      end
    end
    local resetIn = tonumber(ARGV[9])
    if ARGV[10] == 'window' then wseen = now end
    if ARGV[10] == 'bucket' then
      -- One process may take a fixed window for a bucket (responses out of order look like a
      -- refill): a window another told in the last two windows' time still holds for all.
      if news and not (wseen and now - wseen < 2 * windowMs) then wrem = nil; wreset = nil end
    elseif resetIn and resetIn > 0 then
      -- Which window it was counted in, by its reset (they are a second or more apart). The
      -- first response of a new one starts it, even to an older take (a lease's, sent late);
      -- one from a window already over, answered before its end, says nothing of the window
      -- now (its short reset would start the next one afresh in the middle of this one), nor of
      -- a window begun with no response yet (its end a window's length after the last).
      local at = now + resetIn
      if not wlast or at > wlast + 500 then
        wrem = estimate; wreset = at; wlast = at; wlow = remaining; wlowseq = takeSeq
      elseif wreset and wreset <= wlast + 500 and at > wlast - 500 then
        -- A newer take may have reached the server before older ones whose responses came
        -- first: they are no longer outstanding, and its count lacks them (its estimate is too
        -- high by as many). The lowest remaining the window told is the latest count known:
        -- what it leaves, less every take after that one and those before it still on their
        -- way, bounds the estimate (takes ended since told a lower one, or are in that count).
        if not wlow or remaining < wlow then wlow = remaining; wlowseq = takeSeq end
        local latest = wlow - (seq - wlowseq) - redis.call('ZCOUNT', KEYS[3], '-inf', '(' .. wlowseq)
        estimate = math.max(0, math.min(estimate, latest))
        if news then wrem = estimate else wrem = math.min(wrem or estimate, estimate) end
        wreset = math.min(wreset, at)
      end
    end
  end
  local pause = tonumber(ARGV[11])
  if pause and pause > 0 then
    paused = math.max(paused, now + pause)
    tokens = 0
  end
  -- Only now: they may have reached the server after the take above, so its count lacks them.
  if ours and #ARGV >= 13 then redis.call('ZREM', KEYS[3], unpack(ARGV, 13)) end
elseif op == 'return' then
  -- Leased tokens that lapsed unsent never reach the server: its bucket still has them.
  local first = tonumber(ARGV[6]) or 0
  local count = math.max(0, math.min(tonumber(ARGV[7]) or 0, seq - first + 1))
  if first > 0 and count > 0 and tonumber(ARGV[8]) == born then
    local last = first + count - 1
    -- The tokens were lowered for those after the newest response used (a bucket's estimate
    -- leaves out earlier outstanding takes); a window's remaining, for every one outstanding.
    local unsentAfter = redis.call('ZCOUNT', KEYS[3], math.max(first, obsseq + 1), last)
    local unsent = redis.call('ZREMRANGEBYSCORE', KEYS[3], first, last)
    tokens = math.min(burst, tokens + unsentAfter)
    if wrem then wrem = math.min(limit, wrem + unsent) end
  end
end

local ttl = math.max(120000, windowMs * 3)
-- Only a take creates the budget (with its hints); a heartbeat or a hint alone does not.
if op == 'take' or not fresh then
  redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', now, 'limit', limit, 'burst', burst, 'paused', paused, 'seq', seq, 'obsseq', obsseq, 'hold1', hold1, 'hold2', hold2, 'ckseq', ckseq, 'ckat', ckat, 'born', born, 'solo', solo)
  if wlast then redis.call('HSET', KEYS[1], 'wlast', wlast) end
  if wlow then redis.call('HSET', KEYS[1], 'wlow', wlow, 'wlowseq', wlowseq) end
  if wseen then redis.call('HSET', KEYS[1], 'wseen', wseen) end
  if wrem then redis.call('HSET', KEYS[1], 'wrem', wrem) else redis.call('HDEL', KEYS[1], 'wrem') end
  if wreset then redis.call('HSET', KEYS[1], 'wreset', wreset) else redis.call('HDEL', KEYS[1], 'wreset') end
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('PEXPIRE', KEYS[3], ttl)
end
redis.call('ZADD', KEYS[2], now, ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - 60000)
redis.call('PEXPIRE', KEYS[2], ttl)
local out = { wait, seq, limit, burst, math.floor(tokens * 1000), redis.call('ZCARD', KEYS[2]), math.max(0, paused - now), wrem or -1, born }
if op == 'take' then
  table.insert(out, granted)
  table.insert(out, leaseMs)
elseif op == 'beat' then
  for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do table.insert(out, id) end
end
return out
`;
