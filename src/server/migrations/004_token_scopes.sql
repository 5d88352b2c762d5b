-- Frontend tokens, and the scope of client and frontend tokens: the environment and projects they
-- give access to (Unleash's `<project>:<environment>.<secret>` tokens), as /edge/validate reports them.
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_type_check;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_type_check CHECK (type IN ('client', 'frontend', 'admin'));
-- NULL: a token not in Unleash's format, for no environment in particular.
ALTER TABLE api_tokens ADD COLUMN environment TEXT NULL;
-- ["*"] for every project.
ALTER TABLE api_tokens ADD COLUMN projects JSONB NOT NULL DEFAULT '["*"]';
ALTER TABLE api_tokens ADD COLUMN token_name TEXT NULL;
