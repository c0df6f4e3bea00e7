export {
  loadConfig,
  permissionWarnings,
  configFileSchema,
  BOUNDS,
  DEFAULT_INTERVALS,
  DEFAULT_CONFIG_PATH,
  type Config,
  type ConfigFile,
  type ConfigFlags,
  type HttpConfig,
  isLoopback,
  resolveRedisUrl,
} from './config.ts';
