export { type ConnectionOptions, type RedisConnection, connectRedis, credentialsRefusal, redisUrlProblem, parseClusterUrl, probeRedis, redactRedisUrl, refusedCredentials } from './connect.ts';
