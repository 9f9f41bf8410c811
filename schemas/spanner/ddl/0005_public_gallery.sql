-- The public gallery (store.Reader.ListPublicExperiments): public live
-- experiments, with what the search reads, without scanning the others.
-- Its order (the latest write to an experiment or any of its series) is
-- computed per row, so the index narrows the rows, it does not sort them.
CREATE INDEX ExperimentsByVisibility ON Experiments (Visibility, State) STORING (Name, Description, OwnerId, UpdateTime);
