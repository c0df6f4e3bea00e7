export * from './events.ts';
export {
  type CompositionState,
  type RebalanceStates,
  type IndexListState,
  type NewEvent,
  compositionState,
  weightChanges,
  detectComposition,
  detectRebalancing,
  detectPerformance,
  detectIndexList,
  stableHash,
} from './detector.ts';
