/**
 * The Redis limiter's Lua, one script per operation, as string constants (the package ships
 * dist/ and config/ only). RedisStore loads them once with ioredis `defineCommand` and runs
 * them as EVALSHA. Each mirrors the memory store (memory-store.ts) step for step.
 *
 * Keys, all with the `{tenant}` hash tag so one tenant's keys share a Redis Cluster slot:
 * - KEYS[1] `<prefix>{<tenant>}:s`, a hash: `tat` (GCRA theoretical arrival time, ms),
 *   `tok` / `tokAt` (token bucket level, may be negative, and when it was set), `day` /
 *   `dayUsed` (UTC day number and the tokens charged to it). PEXPIREd when it would be
 *   back at rest (tat passed, bucket full), or at the end of the day under a daily budget.
 * - KEYS[2] `<prefix>{<tenant>}:l`, a sorted set: the concurrency leases, requestId scored
 *   by its expiry (ms). Expired members are dropped on every check.
 * - KEYS[3] `<prefix>{<tenant>}:r:<requestId>`, a string `<reserved>:<day>`: the admitted
 *   request's reservation, PEXPIREd with its lease. Its presence makes check and settle
 *   idempotent by requestId.
 *
 * Time is Redis's `TIME`, never the caller's. Times and levels are stored with
 * string.format('%.3f') (Lua's default number format keeps 14 digits, too few for epoch ms
 * with a fraction). Replies are arrays of integers; -1 stands for a limit not set.
 */

/** Shared prelude: the clock and the limit-state helpers. */
const PRELUDE = `
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local EPS = 1e-6
local MIN = 60000
local DAY = 86400000
local function fmt(x) return string.format('%.3f', x) end
local function bucket(tok, tokAt, tpm)
  if tok == nil then return tpm end
  local l = tok + math.max(0, now - tokAt) * tpm / MIN
  if l > tpm then l = tpm end
  return l
end
local function tokens_state(tpm, lvl)
  if tpm <= 0 then return -1, -1, -1 end
  return tpm, math.max(0, math.floor(lvl + EPS)), math.max(0, math.ceil((tpm - lvl) * MIN / tpm - EPS))
end
`

/**
 * check. ARGV: rpm, tpm, max_concurrent, daily_tokens (0 = not set), reserveTokens, leaseMs,
 * requestId, concurrency retry hint ms. Reply: allowed (1/0), refused (0 none, 1 daily_tokens,
 * 2 max_concurrent, 3 rpm, 4 tpm), retryAfterMs, budgetSpent (1/0), requests limit /
 * remaining / resetMs, tokens limit / remaining / resetMs.
 */
export const CHECK_LUA = `${PRELUDE}
local rpm = tonumber(ARGV[1])
local tpm = tonumber(ARGV[2])
local maxc = tonumber(ARGV[3])
local daily = tonumber(ARGV[4])
local reserve = tonumber(ARGV[5])
local leaseMs = tonumber(ARGV[6])
local id = ARGV[7]
local concRetry = tonumber(ARGV[8])

local st = redis.call('HMGET', KEYS[1], 'tat', 'tok', 'tokAt', 'day', 'dayUsed')
local tat = tonumber(st[1]) or 0
local tok = tonumber(st[2])
local tokAt = tonumber(st[3]) or now
local today = math.floor(now / DAY)
local day = tonumber(st[4])
local dayUsed = tonumber(st[5]) or 0
if day ~= today then day = today; dayUsed = 0 end

local function reply(allowed, refused, wait, spent, lvl)
  local rl, rr, rs = -1, -1, -1
  if rpm > 0 then
    local ahead = math.max(0, tat - now)
    rl = rpm
    rr = math.max(0, math.floor((MIN - ahead) * rpm / MIN + EPS))
    rs = math.ceil(ahead - EPS)
  end
  local tl, tr, ts = tokens_state(tpm, lvl)
  return {allowed, refused, wait, spent, rl, rr, rs, tl, tr, ts}
end

redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', fmt(now))
if redis.call('EXISTS', KEYS[3]) == 1 then
  return reply(1, 0, 0, 0, bucket(tok, tokAt, tpm))
end

local refused = 0
local wait = 0
if daily > 0 and dayUsed >= daily then
  refused = 1
  wait = (today + 1) * DAY - now
end
if maxc > 0 and redis.call('ZCARD', KEYS[2]) >= maxc then
  if refused == 0 then refused = 2 end
  local w = concRetry
  local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  if first[2] then w = math.min(w, tonumber(first[2]) - now) end
  wait = math.max(wait, w)
end
local newTat = tat
if rpm > 0 then
  newTat = math.max(tat, now) + MIN / rpm
  local allowAt = newTat - MIN
  if allowAt > now + EPS then
    if refused == 0 then refused = 3 end
    wait = math.max(wait, allowAt - now)
  end
end
local lvl = 0
if tpm > 0 then
  lvl = bucket(tok, tokAt, tpm)
  local need = math.min(reserve, tpm)
  if lvl + EPS < need then
    if refused == 0 then refused = 4 end
    wait = math.max(wait, (need - lvl) * MIN / tpm)
  end
end
if refused ~= 0 then
  local spent = 0
  if refused == 1 then spent = 1 end
  return reply(0, refused, math.max(1, math.ceil(wait - EPS)), spent, lvl)
end

local ttl = 0
if rpm > 0 then
  tat = newTat
  redis.call('HSET', KEYS[1], 'tat', fmt(tat))
  ttl = math.max(ttl, tat - now)
end
if tpm > 0 then
  lvl = lvl - reserve
  redis.call('HSET', KEYS[1], 'tok', fmt(lvl), 'tokAt', fmt(now))
  ttl = math.max(ttl, (tpm - lvl) * MIN / tpm)
end
dayUsed = dayUsed + reserve
redis.call('HSET', KEYS[1], 'day', day, 'dayUsed', dayUsed)
if daily > 0 then ttl = math.max(ttl, (today + 1) * DAY - now) end
redis.call('PEXPIRE', KEYS[1], math.ceil(ttl) + 1000)

local expiresAt = now + leaseMs
redis.call('ZADD', KEYS[2], fmt(expiresAt), id)
if redis.call('PTTL', KEYS[2]) < leaseMs then redis.call('PEXPIRE', KEYS[2], leaseMs + 1000) end
redis.call('SET', KEYS[3], reserve .. ':' .. day, 'PX', leaseMs)
return reply(1, 0, 0, 0, lvl)
`

/**
 * settle. ARGV: tpm (0 = not set), usedTokens, requestId. Refunds or charges usedTokens minus
 * the reservation to the bucket (never above tpm) and to the reservation's day, and releases
 * the lease. Reply: settled (1/0), tokens limit / remaining / resetMs.
 */
export const SETTLE_LUA = `${PRELUDE}
local tpm = tonumber(ARGV[1])
local used = tonumber(ARGV[2])
local id = ARGV[3]
redis.call('ZREM', KEYS[2], id)
local st = redis.call('HMGET', KEYS[1], 'tok', 'tokAt', 'day', 'dayUsed')
local tok = tonumber(st[1])
local tokAt = tonumber(st[2]) or now
local rec = redis.call('GET', KEYS[3])
if not rec then
  local tl, tr, ts = tokens_state(tpm, bucket(tok, tokAt, tpm))
  return {0, tl, tr, ts}
end
redis.call('DEL', KEYS[3])
local sep = string.find(rec, ':', 1, true)
local reserved = tonumber(string.sub(rec, 1, sep - 1))
local rday = tonumber(string.sub(rec, sep + 1))
local diff = used - reserved
local lvl = 0
local ttl = 0
if tpm > 0 then
  lvl = bucket(tok, tokAt, tpm) - diff
  if lvl > tpm then lvl = tpm end
  redis.call('HSET', KEYS[1], 'tok', fmt(lvl), 'tokAt', fmt(now))
  ttl = (tpm - lvl) * MIN / tpm
end
if tonumber(st[3]) == rday then
  redis.call('HSET', KEYS[1], 'dayUsed', math.max(0, (tonumber(st[4]) or 0) + diff))
end
local pttl = redis.call('PTTL', KEYS[1])
if pttl >= 0 and pttl < ttl + 1000 or pttl == -1 then redis.call('PEXPIRE', KEYS[1], math.ceil(ttl) + 1000) end
local tl, tr, ts = tokens_state(tpm, lvl)
return {1, tl, tr, ts}
`

/** renew. KEYS[2], KEYS[3] as above; ARGV: leaseMs, requestId. Reply: 1 renewed, 0 not held. */
export const RENEW_LUA = `${PRELUDE}
local leaseMs = tonumber(ARGV[1])
local id = ARGV[2]
if redis.call('EXISTS', KEYS[3]) == 0 then return 0 end
redis.call('PEXPIRE', KEYS[3], leaseMs)
redis.call('ZADD', KEYS[2], fmt(now + leaseMs), id)
if redis.call('PTTL', KEYS[2]) < leaseMs then redis.call('PEXPIRE', KEYS[2], leaseMs + 1000) end
return 1
`

/**
 * heartbeat. KEYS[1] `<prefix>replicas`, a sorted set of replica ids scored by when their
 * last beat expires; ARGV: replicaId, ttlMs. Reply: the replicas live now (this one included),
 * the divisor of a fail-open share.
 */
export const HEARTBEAT_LUA = `${PRELUDE}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', fmt(now))
redis.call('ZADD', KEYS[1], fmt(now + tonumber(ARGV[2])), ARGV[1])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) + 1000)
return redis.call('ZCARD', KEYS[1])
`

/**
 * usage (for /admin/state). KEYS as check's; ARGV: rpm, tpm (0 = not set). Reads, changes
 * nothing. Reply: requests limit / remaining / resetMs, tokens limit / remaining / resetMs,
 * leases held, tokens charged today.
 */
export const USAGE_LUA = `${PRELUDE}
local rpm = tonumber(ARGV[1])
local tpm = tonumber(ARGV[2])
local st = redis.call('HMGET', KEYS[1], 'tat', 'tok', 'tokAt', 'day', 'dayUsed')
local tat = tonumber(st[1]) or 0
local rl, rr, rs = -1, -1, -1
if rpm > 0 then
  local ahead = math.max(0, tat - now)
  rl = rpm
  rr = math.max(0, math.floor((MIN - ahead) * rpm / MIN + EPS))
  rs = math.ceil(ahead - EPS)
end
local tl, tr, ts = tokens_state(tpm, bucket(tonumber(st[2]), tonumber(st[3]) or now, tpm))
local held = redis.call('ZCOUNT', KEYS[2], '(' .. fmt(now), '+inf')
local used = 0
if tonumber(st[4]) == math.floor(now / DAY) then used = tonumber(st[5]) or 0 end
return {rl, rr, rs, tl, tr, ts, held, used}
`
