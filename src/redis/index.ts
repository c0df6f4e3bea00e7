export { type ConnectionOptions, type RedisConnection, connectRedis, isRedisUrl, parseClusterUrl, redactRedisUrl } from './connect.ts';
