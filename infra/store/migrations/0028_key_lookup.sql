-- The API looks up a request's API key before it knows the tenant, on whichever pooled connection it is
-- handed: one that acts for a tenant (mint_tenant, which cannot read api_keys) or for none. This function
-- reads the one live key the hash names with its owner's rights, so the look-up switches no role either way
-- (infra/store/tenancy.py ANY_TENANT): a request's connection then usually still acts for its tenant.
CREATE FUNCTION mint_developer_for_key(hash text) RETURNS uuid
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
    AS $$ SELECT developer_id FROM api_keys WHERE key_hash = hash AND revoked_at IS NULL $$;
REVOKE ALL ON FUNCTION mint_developer_for_key(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mint_developer_for_key(text) TO mint_tenant;
