export {
  type ConnectionOptions,
  type RedisConnection,
  connectRedis,
  credentialsRefusal,
  describeRedisError,
  redisUrlProblem,
  parseClusterUrl,
  probeRedis,
  reconnectWithinASecond,
  redactRedisUrl,
  refusedCredentials,
} from './connect.ts';
