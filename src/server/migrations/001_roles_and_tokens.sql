-- Roles, their permissions and API tokens, with the built-in roles.

CREATE TABLE roles (
  id SERIAL PRIMARY KEY,
  name TEXT NOT NULL CHECK (btrim(name) <> ''),
  description TEXT NOT NULL DEFAULT '',
  type TEXT NOT NULL CHECK (type IN ('root', 'root-custom', 'project', 'custom')),
  project TEXT NULL,
  built_in BOOLEAN NOT NULL DEFAULT false,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Role names are unique ignoring case and surrounding blanks; concurrent creates of one name
-- give exactly one row, the others fail with unique_violation (23505).
CREATE UNIQUE INDEX roles_name_unique ON roles (lower(btrim(name)));

CREATE TABLE role_permissions (
  role_id INTEGER NOT NULL REFERENCES roles (id) ON DELETE CASCADE,
  permission TEXT NOT NULL,
  -- '' for root and project permissions.
  environment TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (role_id, permission, environment)
);

CREATE TABLE api_tokens (
  -- sha256 of the secret, hex; the secret itself is never stored.
  secret_hash TEXT PRIMARY KEY,
  type TEXT NOT NULL CHECK (type IN ('client', 'admin')),
  role_id INTEGER NULL REFERENCES roles (id) ON DELETE CASCADE,
  source TEXT NOT NULL DEFAULT 'config',
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  CHECK ((type = 'admin') = (role_id IS NOT NULL))
);

INSERT INTO roles (id, name, description, type, built_in) VALUES
  (1, 'Admin', 'Users with the root role Admin can do anything.', 'root', true),
  (2, 'Editor', 'Users with the root role Editor can create projects and manage strategies, segments, context fields and tags.', 'root', true),
  (3, 'Viewer', 'Users with the root role Viewer can only read resources.', 'root', true),
  (4, 'Owner', 'Users with the project role Owner have full control over the project.', 'project', true),
  (5, 'Member', 'Users with the project role Member can create and change features in the project.', 'project', true);

SELECT setval(pg_get_serial_sequence('roles', 'id'), 5);

INSERT INTO role_permissions (role_id, permission) VALUES
  (1, 'ADMIN'),
  (2, 'CREATE_PROJECT'),
  (2, 'CREATE_STRATEGY'),
  (2, 'UPDATE_STRATEGY'),
  (2, 'CREATE_SEGMENT'),
  (2, 'UPDATE_SEGMENT'),
  (2, 'CREATE_CONTEXT_FIELD'),
  (2, 'UPDATE_CONTEXT_FIELD'),
  (2, 'CREATE_TAG_TYPE'),
  (2, 'UPDATE_TAG_TYPE'),
  (2, 'UPDATE_APPLICATION'),
  (4, 'CREATE_FEATURE'),
  (4, 'UPDATE_FEATURE'),
  (4, 'DELETE_FEATURE'),
  (4, 'UPDATE_FEATURE_VARIANTS'),
  (4, 'UPDATE_PROJECT'),
  (4, 'DELETE_PROJECT'),
  (4, 'READ_PROJECT_API_TOKEN'),
  (4, 'CREATE_PROJECT_API_TOKEN'),
  (4, 'DELETE_PROJECT_API_TOKEN'),
  (5, 'CREATE_FEATURE'),
  (5, 'UPDATE_FEATURE'),
  (5, 'DELETE_FEATURE'),
  (5, 'UPDATE_FEATURE_VARIANTS');
