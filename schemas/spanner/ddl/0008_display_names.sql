-- Users: DisplayName is the name the user chose to show others
-- (store.IdentityStore.SetDisplayName); NULL until they choose one, and for
-- every user stored before this version. Others then see the user's handle
-- (store.Handle: "user-" and the start of UserId), never Name, which for a
-- user who signed in with OIDC is their email. Nullable, so adding it is a
-- schema-only change that gives every existing user a handle at once.
ALTER TABLE Users ADD COLUMN DisplayName STRING(MAX);
