"""The database model: the jobs table and its indexes, the statements' commit instants, the claim
strategies and the SQL dialects' behaviour.
"""
