-- Idempotent inserts: every table remembers the deduplication tokens of its
-- last 1000 inserts, so a batch that the writer sends again (after a timeout
-- whose outcome it could not know) is not stored twice. The writer's token is
-- a hash of the batch's rows (store.InsertStatement); the inserts also ask the
-- materialized views to drop the repeated blocks, so trace_index counts each
-- span once. MODIFY SETTING is idempotent: safe on every start, and on tables
-- created before this file existed.
ALTER TABLE ${db}.spans MODIFY SETTING non_replicated_deduplication_window = 1000;
ALTER TABLE ${db}.trace_index MODIFY SETTING non_replicated_deduplication_window = 1000;
ALTER TABLE ${db}.logs MODIFY SETTING non_replicated_deduplication_window = 1000;
ALTER TABLE ${db}.findings MODIFY SETTING non_replicated_deduplication_window = 1000;
ALTER TABLE ${db}.trace_clock MODIFY SETTING non_replicated_deduplication_window = 1000;
