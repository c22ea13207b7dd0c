// defineSearchAttributeKey lives in @temporalio/common, which the workflow SDK itself is built on: deterministic, and
// the same key objects serve the client (at start) and the workflows (upserts).
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** What a run is: deploy, rollback, delete, migrate, promote, reverify, query. */
export const ForgeKindKey = defineSearchAttributeKey('ForgeKind', SearchAttributeType.KEYWORD);
/** What it is about: the tool's or migration's name. */
export const ForgeSubjectKey = defineSearchAttributeKey('ForgeSubject', SearchAttributeType.KEYWORD);
/** How it ended: active, rejected, unchanged, rolled-back, deleted, applied, failed, ... */
export const ForgeOutcomeKey = defineSearchAttributeKey('ForgeOutcome', SearchAttributeType.KEYWORD);
