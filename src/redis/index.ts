export {
  type ConnectionOptions,
  type RedisConnection,
  connectRedis,
  credentialsRefusal,
  describeRedisError,
  redisUrlProblem,
  parseClusterUrl,
  probeRedis,
  redactRedisUrl,
  refusedCredentials,
} from './connect.ts';
