-- Argo CD health of a T9k job (GenericJob, DeepSpeedJob, ColossalAIJob; batch.tensorstack.dev).
-- Source: t9k_sdk/argocd/health.lua; the copies in deploy/argocd/ are generated from it (make
-- argocd-health). Installing it, and what each health means: docs/how-to/argocd-health.md.
--
--   no status yet (or only the CRDs' default {observedGeneration: 0});
--     status.observedGeneration behind metadata.generation               -> Progressing
--   phase Failed (or condition Failed=True)                               -> Degraded
--   Stalled=True: blocked by a foreign object holding a child's name, or
--     by a create the API server refuses (older operators: Running=False
--     with reason NameConflict, CreateFailed or UpdateFailed)             -> Degraded
--   phase Succeeded (or Completed=True)                                   -> Healthy
--   phase Paused (or Paused=True), pausing included                       -> Suspended
--   phase Pending, Resuming, Running                                      -> Progressing
--   anything else                                                         -> Unknown
--
-- observedGeneration and Stalled come from t9k-operator; jobs written by older operators or by
-- T9k's own lack them and are judged by the phase and the T9k conditions. The message is the
-- deciding condition's message. The script runs in Argo CD's sandbox (no string or math library)
-- and never raises on odd input: any field may be missing or of the wrong type.

local function tbl(v)
  if type(v) == "table" then
    return v
  end
  return nil
end

local function text(v)
  if type(v) == "string" then
    return v
  end
  if type(v) == "number" or type(v) == "boolean" then
    return tostring(v)
  end
  return nil
end

local function condition(conditions, kind)
  if conditions == nil then
    return nil
  end
  for _, c in ipairs(conditions) do
    if type(c) == "table" and c.type == kind then
      return c
    end
  end
  return nil
end

local function is_true(c)
  return c ~= nil and c.status == "True"
end

-- The message of the first condition that has one (then its reason), else `fallback`.
local function message(fallback, ...)
  for i = 1, select("#", ...) do
    local c = select(i, ...)
    if c ~= nil then
      local m = text(c.message)
      if m ~= nil and m ~= "" then
        return m
      end
      m = text(c.reason)
      if m ~= nil and m ~= "" and m ~= "-" then
        return m
      end
    end
  end
  return fallback
end

local function health(status, msg)
  return { status = status, message = msg }
end

local kind = text(obj.kind) or "job"
local metadata = tbl(obj.metadata) or {}
local status = obj.status

if status == nil then
  return health("Progressing", "Waiting for the operator to start the " .. kind .. ".")
end
status = tbl(status)
if status == nil then
  return health("Unknown", "status is not an object.")
end

local generation = metadata.generation
local observed = status.observedGeneration
-- The CRDs default a new job's status to {observedGeneration: 0} until the operator writes it.
if status.phase == nil and status.conditions == nil and (observed == nil or observed == 0) then
  return health("Progressing", "Waiting for the operator to start the " .. kind .. ".")
end
if type(generation) == "number" and type(observed) == "number" and observed < generation then
  return health("Progressing", "Waiting for the operator to act on generation "
    .. tostring(generation) .. " of the spec (it last acted on generation "
    .. tostring(observed) .. ").")
end

local conditions = tbl(status.conditions)
local phase = status.phase
local stalled = condition(conditions, "Stalled")
local failed = condition(conditions, "Failed")
local completed = condition(conditions, "Completed")
local paused = condition(conditions, "Paused")
local running = condition(conditions, "Running")
local reconciling = condition(conditions, "Reconciling")
local ready = condition(conditions, "Ready")

if phase == "Failed" or is_true(failed) then
  return health("Degraded", message("The " .. kind .. " failed.", failed, completed, stalled))
end
if is_true(stalled) then
  return health("Degraded", message("The " .. kind .. " cannot make progress.", stalled, running))
end
-- Blocked by a foreign object or a refused write, from an operator that sets no Stalled.
if stalled == nil and running ~= nil and running.status == "False" and (
    running.reason == "NameConflict" or running.reason == "CreateFailed"
    or running.reason == "UpdateFailed") then
  return health("Degraded", message("The " .. kind .. " is blocked.", running))
end
if phase == "Succeeded" or (phase == nil and is_true(completed)) then
  return health("Healthy", message("The " .. kind .. " has finished successfully.", completed))
end
if phase == "Paused" or (phase == nil and is_true(paused)) then
  return health("Suspended", message("The " .. kind .. " is paused.", paused, running))
end
if phase == "Pending" or phase == "Resuming" then
  return health("Progressing", message("The " .. kind .. " is " .. phase .. ".", running,
    reconciling))
end
if phase == "Running" then
  return health("Progressing", message("The " .. kind .. " is running.", running, ready))
end
if phase == nil or phase == "" then
  return health("Progressing", message("Waiting for the operator to start the " .. kind .. ".",
    reconciling, running))
end
if type(phase) ~= "string" then
  return health("Unknown", "status.phase is not a string.")
end
return health("Unknown", "Unrecognised phase " .. phase .. ".")
