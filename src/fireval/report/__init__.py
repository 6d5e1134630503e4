"""fireval.report"""
