-- A write-up's reentrant lock script, as printed: `exist` and `hexist` are no Redis
-- commands (EXISTS and HEXISTS are).
if redis.call('exist',KEYS[1]) == 0 or redis.call('hexist',KEYS[1],ARGV[1]) == 1
then
    redis.call('hincrby',KEYS[1],ARGV[1],1)
    redis.call('expire',KEYS[1],ARGV[2])
    return 1
else
    return 0
end
