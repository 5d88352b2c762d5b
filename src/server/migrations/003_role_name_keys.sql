-- Role names are unique by their look-alike key (see src/server/roles/name-key.ts): NFKC, without
-- default-ignorable code points, blanks folded, lower case. The key is computed by the server; the
-- built-in roles' names are plain ASCII words, so their key is their lower-case name. Roles created
-- before this migration get their key when the server starts (PgRoleStore.fillNameKeys).
ALTER TABLE roles ADD COLUMN name_key TEXT NULL;

UPDATE roles SET name_key = lower(name) WHERE built_in;

CREATE UNIQUE INDEX roles_name_key_unique ON roles (name_key);
