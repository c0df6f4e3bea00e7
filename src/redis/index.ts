export {
  type ConnectionOptions,
  type RedisConnection,
  connectRedis,
  type RedisRefusal,
  describeRedisError,
  redisUrlProblem,
  parseClusterUrl,
  probeRedis,
  reconnectWithinASecond,
  redactRedisUrl,
  refusedSettings,
} from './connect.ts';
