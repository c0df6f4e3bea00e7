export { type ConnectionOptions, type RedisConnection, connectRedis, credentialsRefusal, redisUrlProblem, parseClusterUrl, redactRedisUrl, refusedCredentials } from './connect.ts';
