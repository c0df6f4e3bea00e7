export { type ConnectionOptions, type RedisConnection, connectRedis, redisUrlProblem, parseClusterUrl, redactRedisUrl } from './connect.ts';
