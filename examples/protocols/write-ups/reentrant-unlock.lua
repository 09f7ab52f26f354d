-- The write-up's unlock script, as printed.
if redis.call('hexist',KEYS[1],ARGV[1]) == 0
then
	return nil
elseif redis.call('hincrby',KEYS[1],ARGV[1],-1) == 0
then
    return redis.call('del',KEYS[1])
else
    return 0
end
