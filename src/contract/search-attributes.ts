// defineSearchAttributeKey lives in @temporalio/common, which the workflow SDK itself is built on: deterministic, and
// the same key objects serve the client (at start) and the workflows (upserts).
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** What a run is: deploy, rollback, delete, migrate, promote, reverify, query. */
export const ForgeKindKey = defineSearchAttributeKey('ForgeKind', SearchAttributeType.KEYWORD);
/** What it is about: the tool's or migration's name. */
export const ForgeSubjectKey = defineSearchAttributeKey('ForgeSubject', SearchAttributeType.KEYWORD);
/** How it ended: active, rejected, unchanged, rolled-back, deleted, applied, failed, ... */
export const ForgeOutcomeKey = defineSearchAttributeKey('ForgeOutcome', SearchAttributeType.KEYWORD);
/** The stage a run is in, or the last it reached (where a rejected run stopped): `ForgeStage = "test"`. */
export const ForgeStageKey = defineSearchAttributeKey('ForgeStage', SearchAttributeType.KEYWORD);

/** The custom search attributes above with their types, as `temporal operator search-attribute create` takes them. */
export const FORGE_SEARCH_ATTRIBUTES = {
  [ForgeKindKey.name]: 'Keyword',
  [ForgeSubjectKey.name]: 'Keyword',
  [ForgeOutcomeKey.name]: 'Keyword',
  [ForgeStageKey.name]: 'Keyword',
} as const;
