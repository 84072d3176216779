// The service's public surface: createService and the contract types of its callers.

export { createService, type Service, type ServiceDeps, type ServiceStatus } from './create-service.js';
export * from './types.js';
