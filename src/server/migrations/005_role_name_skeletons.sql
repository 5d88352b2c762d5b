-- Role name keys now also map confusable characters to their prototype (the Unicode TR39 skeleton,
-- see src/server/roles/name-key.ts), in two keys, each unique: name_key (case folded first) and
-- name_key_cased (non-ASCII characters mapped as written first, for capitals such as Cyrillic М that
-- look Latin while their small letters do not). The keys are computed by the server: every role's
-- keys, the built-in roles' included, are recomputed when the server starts (PgRoleStore.fillNameKeys),
-- in id order, so an older role keeps its name and a later look-alike is left without keys.
ALTER TABLE roles ADD COLUMN name_key_cased TEXT NULL;

UPDATE roles SET name_key = NULL;

CREATE UNIQUE INDEX roles_name_key_cased_unique ON roles (name_key_cased);
